"""Helpers shared by the command modules: the app context, output for people (aligned tables, plain values,
colour only on a terminal) or JSON, sizes typed like ``30KB``, file-or-program arguments.

Human output follows a few rules every command keeps: it is printed through :func:`echo` or :func:`say`, which
spell out every character a terminal would act on (state files hold text agents wrote: an ESC sequence in a lesson
must not recolour or retitle a maintainer's terminal), a missing value is ``—``, a boolean is ``yes``/``no``, a list
is comma-separated words (never a Python repr), counts agree with their nouns (:func:`plural`), columns line up
(:func:`table`), colour appears only on a terminal and never with ``NO_COLOR`` set, and a command that changed
nothing says so (:func:`unchanged`).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import shlex
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from statefile.app.context import AppContext
from statefile.app.reading import missing_program
from statefile.cli.run import escaped
from statefile.cli.style import colour_enabled, paint
from statefile.cli.types import SIZE, whole_number
from statefile.model.document import StateDocument
from statefile.numbers import plural
from statefile.redaction import redact
from statefile.store.git.repo import init_bare
from statefile.store.names import is_remote_url
from statefile.views.hints import HINT_STYLES, Hints, hints_for, page

__all__ = [
    "SIZE",
    "colour_enabled",
    "display_width",
    "echo",
    "emit_json",
    "example",
    "paint",
    "pass_app",
    "plain",
    "plural",
    "say",
    "table",
    "unchanged",
]

F = TypeVar("F", bound=Callable[..., Any])


def pass_app(command: F) -> F:
    """Give the command the run's :class:`AppContext`, built once from the global options.

    The options come from the root context (``statefile --json …``) and from the command's own copies of them
    (``statefile … --json``); by the time a command runs, click has parsed both.
    """

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        root = click.get_current_context().find_root()
        app = root.meta.get(_APP_KEY)
        if app is None:
            app = root.meta[_APP_KEY] = AppContext(**(root.obj or {}))
            if not app.quiet:
                app.notify = _note
        try:
            done = command(app, *args, **kwargs)
        except SystemExit:
            _say_stale(app)  # `check` exits 1 after its report: the report still says what it read
            raise
        except KeyboardInterrupt:
            # Ctrl-C once a write may have reached the memory: say so (landed, or may have: how to look), never
            # "aborted", which would have the command run again and record the same thing twice.
            error = app.interrupted()
            if error is None:
                raise
            raise error from None
        finally:
            app.close()
        _say_stale(app)
        return done

    return cast(F, run)


_APP_KEY = "statefile.app"


def _say_stale(app: AppContext) -> None:
    """A read of a copy that may be out of date says so in the output itself, where it cannot be missed (a note on
    stderr alone was: `list` showed programs as paused that were running again on the remote).  ``--json`` output
    stays data; the note on stderr says it there."""
    if app.stale and not app.as_json:
        for line in dict.fromkeys(app.stale):
            click.echo(f"statefile: {line}")
    app.stale.clear()


def _note(message: str) -> None:
    """A note for people on stderr (stdout stays data: ``--json`` output is never mixed with it)."""
    echo(f"statefile: note: {message}", err=True)


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print ``message`` for people (on stderr with ``err``), every control character spelled out (``\\x1b``,
    ``\\u202e``): newlines and tabs stay, so whole markdown (``render``, ``expand``) prints as it reads.

    What commands print goes through here, not ``click.echo``: a file's text, a commit message or a setting may
    hold ESC sequences, C1 controls or bidi overrides, and none of them may act on the terminal.  A line with
    :func:`paint`'s colour is the one exception: it goes to ``click.echo`` with every other part escaped already.
    """
    click.echo(escaped(message), err=err, nl=nl)


def reader_options(command: F) -> F:
    """The options of the read commands an agent calls as gh-aw tools (``render``, ``search``, ``expand``,
    ``history``): ``--hints tools`` names the next step as the component's tool calls (the agent cannot run
    ``statefile``), ``--max-chars``/``--offset`` page the output so a tool's answer stays bounded."""
    command = click.option("--offset", type=whole_number(0), default=0, help="Start the output at this character "
                           "(the number a cut output's last line gives).")(command)  # fmt: skip
    command = click.option("--max-chars", type=whole_number(200), help="Print at most this many characters, then "
                           "one line saying how to get the rest.")(command)  # fmt: skip
    return click.option("--hints", "hint_style", type=click.Choice(HINT_STYLES), default="cli", show_default=True,
                        help="Name next steps as commands, or as the gh-aw agent's tool calls.")(command)  # fmt: skip


def echo_page(text: str, *, max_chars: int | None, offset: int, more: Callable[[int], str]) -> None:
    """Print ``text`` from ``offset``, at most ``max_chars`` characters (all when ``None``), cut at a line end;
    when something is left, a last line ``[statefile] more: …`` with ``more(next offset)``, the call that gets it.

    ``echo`` escapes control characters, so what a tool returns to a model cannot carry terminal or bidi controls;
    the cap is counted before escaping (an escaped character prints as a few more)."""
    shown, following = page(text, max_chars=max_chars or max(len(text), 1), offset=offset)
    if shown:
        echo(shown, nl=not shown.endswith("\n"))
    if following is not None:
        echo(f"[statefile] more: {more(following)}")


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept readable; control characters and bidi marks ``\\u``-escaped,
    as JSON spells them, so the text decodes to the same values and never acts on a terminal)."""
    click.echo(escaped(json.dumps(data, indent=2, ensure_ascii=False, default=str), in_json=True))


def say(app: AppContext, message: str = "") -> None:
    """Print a human-readable line unless ``--quiet`` (through :func:`echo`)."""
    if not app.quiet:
        echo(message)


def is_file_argument(arg: str) -> bool:
    """Whether a command argument names a file rather than a program (it has a path separator or ends in .md)."""
    return arg.endswith(".md") or "/" in arg or os.sep in arg


def file_program(path: Path) -> tuple[Path, str]:
    """The folder and program name for a state file path (``memory/perf.md`` → ``memory``, ``perf``)."""
    return path.parent if str(path.parent) else Path("."), path.stem


@contextmanager
def progress(app: AppContext, items: list[str], label: str) -> Iterator[Iterable[str]]:
    """Iterate ``items`` with a progress bar on stderr when there are many and stderr is a terminal."""
    if app.quiet or app.as_json or len(items) < 20 or not sys.stderr.isatty():
        yield items
        return
    with click.progressbar(items, label=label, file=sys.stderr) as bar:
        yield bar


@contextmanager
def without_checkout(app: AppContext) -> Iterator[AppContext]:
    """``app``, with a scratch bare repository while the block runs when there is no repository around and the
    remote is a URL: a job without a checkout (a gh-aw safe-output job, an MCP server's container) still reads and
    writes the branch through the remote."""
    if app.folder is not None or app.repo_memory:
        yield app
        return
    remote = app.config().remote.value
    if app.repository() is not None or not (remote and is_remote_url(remote)):
        yield app
        return
    import tempfile  # only jobs without a checkout pay for it

    with tempfile.TemporaryDirectory(prefix="statefile-") as scratch:
        init_bare(Path(scratch) / "memory.git")
        yield app.with_repository(Path(scratch) / "memory.git")


def example(*commands: str) -> Callable[[F], F]:
    """Append an "Example" block to a command's help text: each command on its own line, as typed.

    Every one of them is run by the test suite against a prepared repository (tests/cli/test_help_examples.py), so an
    example that stops working fails a test.
    """

    def decorate(fn: F) -> F:
        doc = inspect.cleandoc(fn.__doc__ or "")
        lines = "".join(f"  {command}\n" for command in commands)
        fn.__doc__ = f"{doc}\n\n\b\nExample{'s' if len(commands) > 1 else ''}:\n{lines}"
        return fn

    return decorate


def require_program(app: AppContext, program: str) -> StateDocument:
    """The document of an existing ``program`` (for a read); a missing one is a not-found error naming the closest
    programs."""
    store = app.reader()
    doc = store.read(program)
    if doc is None:
        raise missing_program(store, program)
    return doc


# -- output for people ------------------------------------------------------------------------------------------------

#: How a missing value reads.
MISSING = "—"


def plain(value: Any) -> str:
    """``value`` as a person reads it: ``—`` for none, ``yes``/``no``, a list as ``a, b``, numbers without ``.0``.

    Never a Python repr: ``None``, ``False`` and ``['accepted', …]`` are internals, not output.
    """
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return format(Decimal(repr(value)).normalize(), "f") if value == value and abs(value) < 1e15 else repr(value)
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        return ", ".join(plain(item) for item in items) if items else MISSING
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {plain(item)}" for key, item in value.items()) or MISSING
    return str(value)


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide characters (emoji, CJK) count 2, combining marks 0."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[str],
    *,
    right: Iterable[int] | None = None,
    gap: str = "  ",
) -> list[str]:
    """Rows of values as aligned text lines, the header first (no trailing spaces).

    Cells go through :func:`plain`, their control characters escaped (a width is that of the text printed).
    Columns listed in ``right`` are right-aligned; without ``right``, a column whose every value is a number (or
    missing) is.  Widths count terminal columns (:func:`display_width`), so an emoji or a dash does not shift the
    columns after it.
    """
    raw = [list(row) for row in rows]
    cells = [[escaped(plain(value)) for value in row] for row in raw]
    count = len(headers)
    if right is None:
        numeric = {
            c
            for c in range(count)
            if any(_is_number(row[c]) for row in raw) and all(_is_number(row[c]) or row[c] is None for row in raw)
        }
    else:
        numeric = set(right)
    widths = [display_width(h) for h in headers]
    for row in cells:
        for c, cell in enumerate(row[:count]):
            widths[c] = max(widths[c], display_width(cell))

    def line(values: Sequence[str]) -> str:
        out = []
        for c, cell in enumerate(values[:count]):
            pad = " " * (widths[c] - display_width(cell))
            out.append(pad + cell if c in numeric else cell + pad)
        return gap.join(out).rstrip()

    return [line(list(headers)), *(line(row) for row in cells)]


def unchanged(app: AppContext, what: str) -> None:
    """Say that a command changed nothing (``nothing changed: … already …``) and why."""
    say(app, f"nothing changed: {what}")


def hints_of(app: AppContext, style: str) -> Hints:
    """The next-step hints of ``style`` for this command: tool calls, or commands that repeat the global options
    this one was given (``--repo-memory``, ``--dir``, ``--remote``, ``--branch``, ``--repo``), so that a hint runs
    as written where it is read (credentials in a remote URL are redacted)."""
    if style != "cli":
        return hints_for(style)
    words = ["statefile"]
    if app.repo_memory:
        words.append("--repo-memory")
    for flag, value in (("--dir", app.folder), ("--remote", app.remote), ("--branch", app.branch),
                        ("--repo", app.repo)):  # fmt: skip
        if value is not None:
            words += [flag, redact(str(value))]
    return Hints("cli", prefix=shlex.join(words))
