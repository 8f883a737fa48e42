"""The ``statefile`` command: global options, command registration, and turning errors into exit codes.

Commands live in the modules of :mod:`statefile.cli`; each parses its arguments and calls
:mod:`statefile.app.operations`.
Every deliberate failure is a :class:`~statefile.errors.StatefileError`, printed as one line on stderr with the
exit code documented in :mod:`statefile.errors`; nothing else escapes as a traceback unless ``STATEFILE_DEBUG`` is
set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from statefile import __version__
from statefile.app.context import AppContext
from statefile.errors import EXIT_INTERNAL, EXIT_USAGE, StatefileError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "--version", "-V", prog_name="statefile")
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="STATEFILE_REPO",
    help="Git repository holding the memory branch (default: the one around the current directory). "
    "[env STATEFILE_REPO]",
)
@click.option("--branch", help="Memory branch (default memory/autoloop). [env STATEFILE_BRANCH]")
@click.option(
    "--remote",
    help="Fetch from and push to this remote: a name (origin) or a URL; GITHUB_TOKEN/GH_TOKEN is sent to github.com "
    "as a header, never stored. [env STATEFILE_REMOTE]",
)
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="STATEFILE_DIR",
    help="Work on a plain folder instead of a branch, e.g. /tmp/gh-aw/repo-memory/autoloop. [env STATEFILE_DIR]",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    help="Byte budget per state file (default: config, else 30720). [env STATEFILE_MAX_BYTES]",
)
@click.option("--json", "as_json", is_flag=True, envvar="STATEFILE_JSON", help="Machine-readable JSON output.")
@click.option("--quiet", "-q", is_flag=True, envvar="STATEFILE_QUIET", help="Print only errors and data.")
@click.pass_context
def cli(
    ctx: click.Context,
    repo: Path | None,
    branch: str | None,
    remote: str | None,
    folder: Path | None,
    max_bytes: int | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Keep Autoloop state files — the agent's memory on the memory/autoloop branch — correct and under budget.

    \b
    Moments:
      CI pre-step   statefile --remote origin report --out /tmp/gh-aw/autoloop.json
      agent         statefile record perf --status accepted --metric 0.93 --change "…"
      maintainer    statefile list · statefile log perf · statefile expand perf 57
    Shell completion: eval "$(_STATEFILE_COMPLETE=bash_source statefile)"
    """
    ctx.obj = AppContext(
        repo=repo, branch=branch, remote=remote, folder=folder, max_bytes=max_bytes, as_json=as_json, quiet=quiet
    )


def _register() -> None:
    from statefile.cli import maintenance, memory, programs

    for module in (programs, maintenance, memory):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: run the CLI, turning statefile errors into one line on stderr and an exit code."""
    try:
        return cli.main(args=argv, prog_name="statefile", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code if exc.exit_code else EXIT_USAGE)
    except click.exceptions.Abort:
        click.echo("statefile: aborted", err=True)
        sys.exit(130)
    except StatefileError as exc:
        click.echo(f"statefile: error: {_one_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # `statefile list | head`: the reader went away; that is not an error worth a traceback.
        sys.stderr.close()
        sys.exit(0)
    except Exception as exc:
        if os.environ.get("STATEFILE_DEBUG"):
            raise
        name = type(exc).__name__
        click.echo(
            f"statefile: internal error: {name}: {_one_line(str(exc))} "
            "(set STATEFILE_DEBUG=1 for a traceback and report it)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)


def _one_line(text: str) -> str:
    from statefile.model.text import one_line
    from statefile.store.names import redact

    return one_line(redact(text))
