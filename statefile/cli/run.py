"""Running the command line the way the console script does: every error is one line and an exit code.

Light on purpose (click and the base modules only): ``statefile --version`` imports this and little else.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys

import click

from statefile.cli.style import paint
from statefile.errors import EXIT_ENVIRONMENT, EXIT_INTERNAL, EXIT_USAGE, StatefileError
from statefile.model.text import one_line
from statefile.redaction import redact


def _error() -> str:
    """``error:``, in red on a terminal (never with NO_COLOR or into a pipe)."""
    return paint("error:", fg="red", bold=True, err=True)


def echo_error(message: str) -> None:
    """Print ``message`` on stderr as every error is printed: ``statefile: error:``, one line, redacted, cut short.

    For the commands that go on after one failure (``apply``'s items, ``compact --all``'s programs).
    """
    click.echo(f"statefile: {_error()} {shown(message)}", err=True)


def invoke(command: click.Command, argv: list[str] | None) -> int:
    """Run ``command`` on ``argv`` the way the console script does, returning the exit code.

    Every deliberate failure is a :class:`StatefileError`, printed as one line on stderr with its documented exit
    code; nothing else escapes as a traceback unless ``STATEFILE_DEBUG`` is set.  The demo runs commands through
    this too, so it shows exactly what a user would see.
    """
    try:
        command.main(args=argv, prog_name="statefile", standalone_mode=False)
        sys.stdout.flush()  # here, not at exit: output that cannot be written is an error with its own line
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except _NO_ARGS_IS_HELP as exc:
        # `statefile lesson`: the group's help is what was asked for (click 8.1 printed it and exited 0, 8.2 made it
        # an error whose message is the whole help on one line).
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        return 0
    except click.UsageError as exc:
        # click's own form is three lines (usage, a hint, the error); ours is one, with where to look.
        where = exc.ctx.command_path if exc.ctx is not None else "statefile"
        message = exc.format_message().rstrip(".")
        click.echo(f"statefile: {_error()} {shown(message)}; see '{where} --help'", err=True)
        return exc.exit_code if exc.exit_code else EXIT_USAGE
    except click.ClickException as exc:
        click.echo(f"statefile: {_error()} {shown(exc.format_message())}", err=True)
        return exc.exit_code if exc.exit_code else EXIT_USAGE
    except click.exceptions.Abort:
        click.echo("statefile: aborted", err=True)
        return 130
    except StatefileError as exc:
        echo_error(str(exc))
        return exc.exit_code
    except BrokenPipeError:
        # `statefile list | head`: the reader went away; that is not an error worth a traceback.
        sys.stderr.close()
        return 0
    except SystemExit as exc:
        # A command that chose its exit code (check: 1 when a file fails).
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except MemoryError:
        _discard_output()
        click.echo(
            f"statefile: {_error()} out of memory: the input is larger than this machine lets statefile hold; "
            "nothing was written — check the input's size, or raise the memory limit",
            err=True,
        )
        return EXIT_ENVIRONMENT
    except OSError as exc:
        if exc.errno in _PATH_ADVICE and exc.filename is not None:
            return _path_error(exc)
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            return _internal(exc)
        # Output into a full disk or device, or a read-only place nobody checked for: the machine's problem.
        _discard_output()
        click.echo(
            f"statefile: {_error()} cannot write ({exc.strerror}): the disk or device is full or read-only; free "
            "space or write elsewhere, then run the command again",
            err=True,
        )
        return EXIT_ENVIRONMENT
    except Exception as exc:
        return _internal(exc)
    return 0


def _internal(exc: Exception) -> int:
    """A bug: one line, exit 70 (the traceback with STATEFILE_DEBUG=1)."""
    if os.environ.get("STATEFILE_DEBUG"):
        raise exc
    click.echo(
        f"statefile: internal error: {type(exc).__name__}: {shown(str(exc))} "
        "(set STATEFILE_DEBUG=1 for a traceback and report it)",
        err=True,
    )
    return EXIT_INTERNAL


def _path_error(exc: OSError) -> int:
    """A path the system will not look up: one line naming it (cut short); exit 2, or 8 for permissions.

    Every file or folder a user names (``--dir``, ``--out``, ``--autoloop-json``, a file to compact) is looked at
    with ``stat`` somewhere, and pathlib's ``exists``/``is_dir`` raise instead of answering for these errnos.
    Names statefile builds itself never get here (store paths are validated, components at most 255 bytes), so the
    path is one the user gave and can change; catching it here covers every such option, present and future.
    """
    path = os.fsdecode(exc.filename) if isinstance(exc.filename, (str, bytes)) else str(exc.filename)
    advice, code = _PATH_ADVICE[exc.errno or 0]
    echo_error(f"cannot use {path} ({exc.strerror}): {advice}")
    return code


def _discard_output() -> None:
    """Point stdout at /dev/null, so what is still buffered for it cannot fail again when Python exits (which
    would print its own multi-line complaint and change the exit code)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


# A path no lookup can follow (too long, a loop of links, a file where a folder should be: the user's to change), or
# one behind a folder this user may not enter (the machine's permissions): what to do, and the exit code.
_PATH_ADVICE = {
    errno.ENAMETOOLONG: ("the path or one of its names is longer than the file system holds; give a shorter path",
                         EXIT_USAGE),
    errno.ELOOP: ("the path runs into a loop of symbolic links; fix the link or give another path", EXIT_USAGE),
    errno.ENOTDIR: ("a part of the path is a file, not a folder; check the path", EXIT_USAGE),
    errno.EACCES: ("make it readable for this user, or give another path", EXIT_ENVIRONMENT),
    errno.EPERM: ("make it readable for this user, or give another path", EXIT_ENVIRONMENT),
}  # fmt: skip
# Writes the machine refused: a full disk or device, a quota, a file-size limit, a read-only file system.
_ENVIRONMENT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)
# click 8.2+: a group run without a command raises this (8.1 printed the help and exited 0).
_NO_ARGS_IS_HELP: type[click.UsageError] = getattr(
    click.exceptions, "NoArgsIsHelpError", type("_Never", (click.UsageError,), {})
)


# Characters a terminal acts on instead of showing (ESC starts sequences that retitle the window, move the cursor or
# recolour the rest; C1 controls such as the one-byte CSI do the same; bidi overrides reorder what is read): a remote
# hook's or a file's text is shown, never run.  Newline and tab are layout and stay; so does the CR of a CRLF line
# end (a lone CR would let a line overwrite itself).
_CONTROL = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}" if ord(match.group()) > 0xFF else f"\\x{ord(match.group()):02x}"


def _escape_json(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escaped(text: str, *, in_json: bool = False) -> str:
    """``text`` as printed for people: every character a terminal would act on spelled out (``\\x1b``, ``\\x9b``,
    ``\\u202e``), newlines, tabs and CRLF line ends kept.  Escaping twice changes nothing more.

    ``in_json``: ``text`` is JSON (``json.dumps`` with ``ensure_ascii=False`` leaves DEL, C1 controls and bidi
    marks raw); each is spelled as JSON spells it (``\\u009b``), so the output is still JSON and decodes to the
    same values.
    """
    return _CONTROL.sub(_escape_json if in_json else _escape, text)


# A word longer than this in a message is someone's input (a 100 KB program name, a pasted file): it is cut so the
# line stays one readable line and the advice after it is still seen.
_LONG_WORD = 120


def shown(message: str) -> str:
    """An error message as printed: one line, credentials redacted, control characters escaped, every overlong
    word cut short."""
    words = escaped(one_line(redact(message))).split(" ")
    return " ".join(
        word if len(word) <= _LONG_WORD else f"{word[: _LONG_WORD - 40]}…[{len(word) - (_LONG_WORD - 40):,} more]"
        for word in words
    )
