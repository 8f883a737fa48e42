"""Helpers every command module uses: the app context, and output for people (through :func:`echo`, which spells
out what a terminal would act on: an ESC sequence an agent wrote must not recolour a maintainer's terminal; values
as words, :func:`plain`; aligned columns, :func:`table`) or as JSON."""

from __future__ import annotations

import functools
import inspect
import json
import shlex
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from itertools import zip_longest
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from statefile.app.context import AppContext
from statefile.cli.run import escaped
from statefile.cli.run import paint as paint
from statefile.cli.types import SIZE as SIZE
from statefile.cli.types import whole_number
from statefile.numbers import plural as plural
from statefile.redaction import redact
from statefile.store.git.repo import init_bare
from statefile.store.names import is_remote_url
from statefile.views.hints import HINT_STYLES, TOOLS, Hints, page

F = TypeVar("F", bound=Callable[..., Any])
_APP_KEY = "statefile.app"
#: How a missing value reads.
MISSING = "—"


def pass_app(command: F) -> F:
    """Give the command the run's :class:`AppContext`, built once from the global options (before or after it)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        root = click.get_current_context().find_root()
        app = root.meta.get(_APP_KEY)
        if app is None:
            app = root.meta[_APP_KEY] = AppContext(**(root.obj or {}))
            if not app.quiet:  # notes for people go to stderr: stdout stays data
                app.notify = lambda message: echo(f"statefile: note: {message}", err=True)
        try:
            done = command(app, *args, **kwargs)
        except SystemExit:
            _say_stale(app)  # `check` exits 1 after its report: the report still says what it read
            raise
        except KeyboardInterrupt:
            # Ctrl-C once a write may have reached the memory says so (landed, or how to look), never "aborted",
            # which would have the command run again and record the same thing twice.
            if (error := app.interrupted()) is None:
                raise
            raise error from None
        finally:
            app.close()
        _say_stale(app)
        return done

    return cast(F, run)


def _say_stale(app: AppContext) -> None:
    """A read of a possibly stale copy says so where it cannot be missed (``--json`` stays data: stderr says it)."""
    if app.stale and not app.as_json:
        for line in dict.fromkeys(app.stale):
            click.echo(f"statefile: {line}")
    app.stale.clear()


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print ``message`` for people (on stderr with ``err``), every control character spelled out (``\\x1b``,
    ``\\u202e``), newlines and tabs kept: what commands print goes through here, never raw ``click.echo``."""
    click.echo(escaped(message), err=err, nl=nl)


def reader_options(command: F) -> F:
    """The options of the reads an agent calls as gh-aw tools (``render``, ``search``, ``expand``, ``history``):
    ``--hints tools`` names next steps as the component's tool calls, ``--max-chars``/``--offset`` page the output
    so a tool's answer stays bounded."""
    command = click.option("--offset", type=whole_number(0), default=0, help="Start the output at this character "
                           "(the number a cut output's last line gives).")(command)  # fmt: skip
    command = click.option("--max-chars", type=whole_number(200), help="Print at most this many characters, then "
                           "one line saying how to get the rest.")(command)  # fmt: skip
    return click.option("--hints", "hint_style", type=click.Choice(HINT_STYLES), default="cli", show_default=True,
                        help="Name next steps as commands, or as the gh-aw agent's tool calls.")(command)  # fmt: skip


def echo_page(text: str, *, max_chars: int | None, offset: int, more: Callable[[int], str]) -> None:
    """Print ``text`` from ``offset``, at most ``max_chars`` characters, then ``[statefile] more: {more(offset)}``."""
    shown, following = page(text, max_chars=max_chars or max(len(text), 1), offset=offset)
    if shown:
        echo(shown, nl=not shown.endswith("\n"))
    if following is not None:
        echo(f"[statefile] more: {more(following)}")


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON, non-ASCII readable, control characters and bidi marks ``\\u``-escaped."""
    click.echo(escaped(json.dumps(data, indent=2, ensure_ascii=False, default=str), in_json=True))


def say(app: AppContext, message: str = "") -> None:
    """Print a human-readable line unless ``--quiet`` (through :func:`echo`)."""
    if not app.quiet:
        echo(message)


def unchanged(app: AppContext, what: str) -> None:
    """Say that a command changed nothing (``nothing changed: … already …``) and why."""
    say(app, f"nothing changed: {what}")


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
    remote is a URL: a job without a checkout (a gh-aw safe-output job, an MCP server) still reaches the branch."""
    remote = app.config().remote.value if app.folder is None and not app.repo_memory else None
    if app.repository() is not None or not (remote and is_remote_url(remote)):
        yield app
        return
    import tempfile  # only jobs without a checkout pay for it

    with tempfile.TemporaryDirectory(prefix="statefile-") as scratch:
        init_bare(Path(scratch) / "memory.git")
        yield app.with_repository(Path(scratch) / "memory.git")


def example(*commands: str) -> Callable[[F], F]:
    """Append an "Example" block to a command's help (tests/cli/test_help_examples.py runs every one)."""

    def decorate(fn: F) -> F:
        lines = "".join(f"  {command}\n" for command in commands)
        fn.__doc__ = f"{inspect.cleandoc(fn.__doc__ or '')}\n\n\b\nExample{'s' if len(commands) > 1 else ''}:\n{lines}"
        return fn

    return decorate


def hints_of(app: AppContext, style: str) -> Hints:
    """The next-step hints of ``style``: tool calls, or commands that repeat this one's global options (where the
    memory is: ``--repo-memory``, ``--dir``, ``--remote``, ``--branch``, ``--repo``; credentials redacted)."""
    if style != "cli":
        return TOOLS
    words = ["statefile", *(["--repo-memory"] if app.repo_memory else [])]
    for flag, value in (("--dir", app.folder), ("--remote", app.remote), ("--branch", app.branch),
                        ("--repo", app.repo)):  # fmt: skip
        if value is not None:
            words += [flag, redact(str(value))]
    return Hints("cli", prefix=shlex.join(words))


def plain(value: Any) -> str:
    """``value`` as a person reads it: ``—`` for none, ``yes``/``no``, a list as ``a, b``, numbers without ``.0``."""
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
    shown = [ch for ch in text if not unicodedata.combining(ch) and unicodedata.category(ch) not in ("Mn", "Me", "Cf")]
    return len(shown) + sum(unicodedata.east_asian_width(ch) in ("W", "F") for ch in shown)


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str], *, right: Iterable[int] | None = None) -> list[str]:
    """Rows of values (through :func:`plain`, escaped) as aligned lines, the header first: columns in ``right``, else
    those of numbers only, right-aligned; widths in terminal columns (:func:`display_width`)."""
    raw = [list(row) for row in rows]
    cells = [[escaped(plain(value)) for value in row] for row in raw]

    def number(value: Any) -> bool:
        return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)

    columns = enumerate(zip(*raw, strict=False))
    numeric = {c for c, column in columns if any(map(number, column)) and all(number(v) or v is None for v in column)}
    numeric = set(right) if right is not None else numeric
    widths = [max(map(display_width, column)) for column in zip_longest(headers, *cells, fillvalue="")]

    def line(values: Sequence[str]) -> str:
        padded = ((cell, " " * (widths[c] - display_width(cell))) for c, cell in enumerate(values[: len(headers)]))
        return "  ".join(pad + cell if c in numeric else cell + pad for c, (cell, pad) in enumerate(padded)).rstrip()

    return [line(list(headers)), *(line(row) for row in cells)]
