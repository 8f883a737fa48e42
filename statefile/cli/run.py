"""Running the command line the way the console script does: every error is one line and an exit code.

Light on purpose (click and the base modules only): ``statefile --version`` imports this and little else.
"""

from __future__ import annotations

import os
import sys

import click

from statefile.errors import EXIT_INTERNAL, EXIT_USAGE, StatefileError
from statefile.model.text import one_line
from statefile.redaction import redact


def invoke(command: click.Command, argv: list[str] | None) -> int:
    """Run ``command`` on ``argv`` the way the console script does, returning the exit code.

    Every deliberate failure is a :class:`StatefileError`, printed as one line on stderr with its documented exit
    code; nothing else escapes as a traceback unless ``STATEFILE_DEBUG`` is set.  The demo runs commands through
    this too, so it shows exactly what a user would see.
    """
    try:
        command.main(args=argv, prog_name="statefile", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code if exc.exit_code else EXIT_USAGE
    except click.exceptions.Abort:
        click.echo("statefile: aborted", err=True)
        return 130
    except StatefileError as exc:
        click.echo(f"statefile: error: {one_line(redact(str(exc)))}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        # `statefile list | head`: the reader went away; that is not an error worth a traceback.
        sys.stderr.close()
        return 0
    except SystemExit as exc:
        # A command that chose its exit code (check: 1 when a file fails).
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        if os.environ.get("STATEFILE_DEBUG"):
            raise
        click.echo(
            f"statefile: internal error: {type(exc).__name__}: {one_line(redact(str(exc)))} "
            "(set STATEFILE_DEBUG=1 for a traceback and report it)",
            err=True,
        )
        return EXIT_INTERNAL
    return 0
