"""Running the command line as the console script does: every error is one line and an exit code; colour only on
a terminal.  Light on purpose (click and the base modules only): ``statefile --version`` imports little else."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from collections.abc import Mapping
from typing import IO

import click

from statefile.errors import EXIT_ENVIRONMENT, EXIT_INTERNAL, EXIT_USAGE, StatefileError
from statefile.model.text import one_line
from statefile.redaction import redact


def colour_enabled(stream: IO[str] | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether to colour ``stream`` (stdout): a terminal only, never with NO_COLOR (no-color.org) or TERM=dumb."""
    environment = os.environ if env is None else env
    if environment.get("NO_COLOR") or environment.get("TERM") == "dumb":
        return False
    try:
        return bool((stream or sys.stdout).isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def paint(text: str, *, fg: str | None = None, bold: bool = False, err: bool = False) -> str:
    """``text`` styled for a terminal when colour is on for stdout (``err``: stderr), else unchanged."""
    return click.style(text, fg=fg, bold=bold) if colour_enabled(sys.stderr if err else sys.stdout) else text


def echo_error(message: str) -> None:
    """Print ``message`` as every error is printed: ``statefile: error:``, one line, redacted, cut short."""
    click.echo(f"statefile: {paint('error:', fg='red', bold=True, err=True)} {shown(message)}", err=True)


def invoke(command: click.Command, argv: list[str] | None) -> int:
    """Run ``command`` on ``argv`` as the console script does (the demo too), returning the exit code: every
    failure is one line on stderr and a documented exit code, never a traceback (unless ``STATEFILE_DEBUG``)."""
    try:
        command.main(args=argv, prog_name="statefile", standalone_mode=False)
        sys.stdout.flush()  # here, not at exit: output that cannot be written is an error with its own line
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except _NO_ARGS_IS_HELP as exc:
        # `statefile lesson`: the group's help was asked for (click 8.2+ makes it an error of the whole help).
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        return 0
    except click.ClickException as exc:
        # click's usage error is three lines (usage, a hint, the error); ours is one, with where to look.
        message = exc.format_message()
        if isinstance(exc, click.UsageError):
            message = f"{message.rstrip('.')}; see '{exc.ctx.command_path if exc.ctx else 'statefile'} --help'"
        echo_error(message)
        return exc.exit_code or EXIT_USAGE
    except click.exceptions.Abort:
        click.echo("statefile: aborted", err=True)
        return 130
    except StatefileError as exc:
        echo_error(str(exc))
        return exc.exit_code
    except BrokenPipeError:  # `statefile list | head`: the reader went away, which is no error
        sys.stderr.close()
        return 0
    except SystemExit as exc:  # a command that chose its exit code (check: 1 when a file fails)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except MemoryError:
        return _environment("out of memory: the input is larger than this machine lets statefile hold; nothing was "
                            "written — check the input's size, or raise the memory limit")  # fmt: skip
    except OSError as exc:
        if exc.errno in _PATH_ADVICE and exc.filename is not None:
            # A path the user gave (statefile's own names are validated) that stat will not follow.
            advice, code = _PATH_ADVICE[exc.errno]
            path = os.fsdecode(exc.filename) if isinstance(exc.filename, str | bytes) else str(exc.filename)
            echo_error(f"cannot use {path} ({exc.strerror}): {advice}")
            return code
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS):
            return _environment(f"cannot write ({exc.strerror}): the disk or device is full or read-only; free "
                                "space or write elsewhere, then run the command again")  # fmt: skip
        return _internal(exc)
    except Exception as exc:
        return _internal(exc)
    return 0


def _internal(exc: Exception) -> int:
    """A bug: one line, exit 70 (the traceback with STATEFILE_DEBUG=1)."""
    if os.environ.get("STATEFILE_DEBUG"):
        raise exc
    click.echo(f"statefile: internal error: {type(exc).__name__}: {shown(str(exc))} "
               "(set STATEFILE_DEBUG=1 for a traceback and report it)", err=True)  # fmt: skip
    return EXIT_INTERNAL


def _environment(message: str) -> int:
    """The machine's problem: one line, exit 8, stdout pointed at /dev/null (what is buffered cannot fail again)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    echo_error(message)
    return EXIT_ENVIRONMENT


# A path no lookup can follow (the user's to change), or behind a folder this user may not enter (the machine's).
_PATH_ADVICE = {
    errno.ENAMETOOLONG: ("the path or one of its names is longer than the file system holds; give a shorter path",
                         EXIT_USAGE),
    errno.ELOOP: ("the path runs into a loop of symbolic links; fix the link or give another path", EXIT_USAGE),
    errno.ENOTDIR: ("a part of the path is a file, not a folder; check the path", EXIT_USAGE),
    **dict.fromkeys((errno.EACCES, errno.EPERM), ("make it readable for this user, or give another path",
                                                  EXIT_ENVIRONMENT)),
}  # fmt: skip
# click 8.2+: a group run without a command raises this (8.1 printed the help and exited 0).
_NO_ARGS_IS_HELP: type[click.UsageError] = getattr(
    click.exceptions, "NoArgsIsHelpError", type("_Never", (click.UsageError,), {})
)
# What a terminal acts on instead of showing (ESC sequences, C1 controls, bidi overrides, a lone CR): a hook's or a
# file's text is shown, never run.  Newline, tab and the CR of a CRLF are layout and stay.
_CONTROL = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escaped(text: str, *, in_json: bool = False) -> str:
    """``text`` as printed for people: every character a terminal would act on spelled out (``\\x1b``, ``\\u202e``),
    newlines, tabs and CRLF line ends kept; idempotent.  ``in_json``: ``text`` is JSON, and each is spelled as JSON
    spells it (``\\u009b``), so it still decodes to the same values."""

    def spelled(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\u{code:04x}" if in_json or code > 0xFF else f"\\x{code:02x}"

    return _CONTROL.sub(spelled, text)


def shown(message: str, cut: int = 120) -> str:
    """An error message as printed: one line, credentials redacted, control characters escaped, and every word
    longer than ``cut`` (someone's input: a 100 KB name, a pasted file) cut short, so the advice after it is seen."""
    words = escaped(one_line(redact(message))).split(" ")
    return " ".join(
        word if len(word) <= cut else f"{word[: cut - 40]}…[{len(word) - (cut - 40):,} more]" for word in words
    )
