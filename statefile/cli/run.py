"""Running the command line as the console script does: every error is one line and an exit code; colour only on
a terminal; the click types of sizes and numbers.  Light on purpose: ``statefile --version`` imports little else."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from collections.abc import Mapping
from typing import IO, Any

import click

from statefile.defaults import MAX_GITHUB_NUMBER, parse_size
from statefile.errors import EXIT_ENVIRONMENT, EXIT_INTERNAL, EXIT_USAGE, StatefileError
from statefile.model.text import one_line
from statefile.redaction import redact


class SizeType(click.ParamType[int]):
    """A byte size as the configuration takes it (``30720``, ``30KB``, ``1.5MiB``: :func:`defaults.parse_size`)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class WholeNumber(click.IntRange):
    """A count of at least ``min``, or a GitHub issue or PR number (``max``), refused in words, not click's."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        cut = text if len(text) <= 40 else text[:20] + "…"
        example = 12 if self.max else max(self.min or 0, 5)
        if not text.isascii() or not text.removeprefix("-").isdigit():
            self.fail(f"{cut!r} is not a whole number; give one such as {example}", param, ctx)
        if self.max is not None and (len(text) > len(str(self.max)) or not (self.min or 0) <= int(text) <= self.max):
            self.fail(f"{cut} is not an issue or pull request number: GitHub's go from 1 to {self.max:,}", param, ctx)
        if len(text) > 100:  # too many digits for int(), which refuses thousands
            self.fail(f"{cut!r} has {len(text):,} digits, far beyond any count; give one such as {example}", param, ctx)
        return super().convert(int(text), param, ctx)


SIZE = SizeType()
GITHUB_NUMBER = WholeNumber(min=1, max=MAX_GITHUB_NUMBER)


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
    """``text`` styled when colour is on for stdout (``err``: stderr), else unchanged."""
    return click.style(text, fg=fg, bold=bold) if colour_enabled(sys.stderr if err else sys.stdout) else text


def echo_error(message: str, code: int = EXIT_USAGE) -> int:
    """Print ``message`` as every error is printed (one line, redacted, cut short); return the exit ``code``."""
    click.echo(f"statefile: {paint('error:', fg='red', bold=True, err=True)} {shown(message)}", err=True)
    return code


def lost_interrupt(unraisable: sys.UnraisableHookArgs) -> None:
    """The console's ``sys.unraisablehook``: a Ctrl-C Python cannot raise (in a callback) is a line, not a traceback."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        sys.stderr.write("statefile: note: a Ctrl-C came where Python could not stop the command; it went on\n")
    else:
        sys.__unraisablehook__(unraisable)


def invoke(command: click.Command, argv: list[str] | None) -> int:
    """Run ``command`` as the console script does: every failure is one line and a documented exit code."""
    try:
        command.main(args=argv, prog_name="statefile", standalone_mode=False)
        sys.stdout.flush()  # here, not at exit: output that cannot be written is an error with its own line
        return 0
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except _NO_ARGS_IS_HELP as exc:  # `statefile lesson`: click 8.2+ makes the group's help an error
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        return 0
    except click.UsageError as exc:
        # click's usage error is three lines (usage, a hint, the error); ours is one, with where to look.
        where = exc.ctx.command_path if exc.ctx else "statefile"
        return echo_error(f"{exc.format_message().rstrip('.')}; see '{where} --help'", exc.exit_code or EXIT_USAGE)
    except click.ClickException as exc:
        return echo_error(exc.format_message(), exc.exit_code or EXIT_USAGE)
    except click.exceptions.Abort:
        click.echo("statefile: aborted", err=True)
        return 130
    except StatefileError as exc:
        return echo_error(str(exc), exc.exit_code)
    except BrokenPipeError:  # `statefile list | head`: the reader went away, which is no error
        sys.stderr.close()
        return 0
    except SystemExit as exc:  # a command that chose its exit code (check: 1 when a file fails)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except MemoryError:
        return _environment("out of memory: the input is larger than this machine lets statefile hold; nothing was "
                            "written — check the input's size, or raise the memory limit")  # fmt: skip
    except Exception as exc:
        if isinstance(exc, OSError) and exc.errno in _PATH_ADVICE and exc.filename is not None:
            # A path the user gave (statefile's own names are validated) that stat will not follow.
            advice, code = _PATH_ADVICE[exc.errno]
            path = os.fsdecode(exc.filename) if isinstance(exc.filename, str | bytes) else exc.filename
            return echo_error(f"cannot use {path} ({exc.strerror}): {advice}", code)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS):
            return _environment(f"cannot write ({exc.strerror}): the disk or device is full or read-only; free "
                                "space or write elsewhere, then run the command again")  # fmt: skip
        if os.environ.get("STATEFILE_DEBUG"):
            raise
        click.echo(f"statefile: internal error: {type(exc).__name__}: {shown(str(exc))} "
                   "(set STATEFILE_DEBUG=1 for a traceback and report it)", err=True)  # fmt: skip
        return EXIT_INTERNAL


def _environment(message: str) -> int:
    """Stdout goes to /dev/null first: what is still buffered cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return echo_error(message, EXIT_ENVIRONMENT)


# A path no lookup can follow (the user's to change), or behind a folder this user may not enter (the machine's).
_PATH_ADVICE = {
    errno.ENAMETOOLONG: ("the path or one of its names is longer than the file system holds; give a shorter path",
                         EXIT_USAGE),
    errno.ELOOP: ("the path runs into a loop of symbolic links; fix the link or give another path", EXIT_USAGE),
    errno.ENOTDIR: ("a part of the path is a file, not a folder; check the path", EXIT_USAGE),
    **dict.fromkeys((errno.EACCES, errno.EPERM), ("make it readable for this user, or give another path",
                                                  EXIT_ENVIRONMENT)),
}  # fmt: skip
# click 8.2+: a group run without a command raises this (8.1 printed the help and exited 0; `except ()` is a no-op).
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())
# What a terminal acts on instead of showing (ESC sequences, C1 controls, bidi overrides, a lone CR): a hook's or a
# file's text is shown, never run.  Newline, tab and the CR of a CRLF are layout and stay.
_CONTROL = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escaped(text: str, *, in_json: bool = False) -> str:
    """``text`` with what a terminal would act on spelled out (``\\x1b``; as JSON does with ``in_json``); idempotent."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}" if in_json or ord(m[0]) > 0xFF else f"\\x{ord(m[0]):02x}", text)


def shown(message: str, cut: int = 120) -> str:
    """An error message as printed: one line, redacted, escaped, words over ``cut`` (pasted input) cut short."""
    words = escaped(one_line(redact(message))).split(" ")
    return " ".join(
        word if len(word) <= cut else f"{word[: cut - 40]}…[{len(word) - (cut - 40):,} more]" for word in words
    )
