"""What every command module uses: the app context, and output for people (through :func:`echo`, which spells out
what a terminal would act on: an ESC sequence an agent wrote must not recolour a maintainer's terminal) or JSON."""

from __future__ import annotations

import functools
import inspect
import json
import shlex
import shutil
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from itertools import zip_longest
from pathlib import Path
from typing import Any, NamedTuple

import click

from statefile.app.context import AppContext
from statefile.cli.run import WholeNumber, escaped
from statefile.redaction import redact
from statefile.store.git.runner import init_bare
from statefile.store.names import is_remote_url
from statefile.views.render import HINT_STYLES, TOOL_EXPAND, TOOL_HISTORY, TOOL_SEARCH, TOOL_VIEW, TOOLS, Hints, page


def command(
    name: str, *examples: str, group: click.Group | None = None
) -> Callable[[Callable[..., Any]], click.Command]:
    """A command (of ``group``) with ``examples``, given the run's :class:`AppContext`; what it returns is JSON."""

    def say_stale(app: AppContext) -> None:  # a possibly stale read says so where it cannot be missed
        for line in () if app.as_json else dict.fromkeys(app.stale):
            click.echo(f"statefile: {line}")

    def decorate(fn: Callable[..., Any]) -> click.Command:
        lines = "".join(f"  {line}\n" for line in examples)
        fn.__doc__ = f"{inspect.cleandoc(fn.__doc__ or '')}\n\n\b\nExample{'s' if len(examples) > 1 else ''}:\n{lines}"

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> None:
            app = AppContext(**(click.get_current_context().find_root().obj or {}))
            if not app.quiet:  # notes for people go to stderr: stdout stays data
                app.notify = lambda message: echo(f"statefile: note: {message}", err=True)
            try:
                data = fn(app, *args, **kwargs)
            except SystemExit:
                say_stale(app)  # `check` exits 1 after its report: the report still says what it read
                raise
            except KeyboardInterrupt:
                # Ctrl-C once a write may have reached the memory says so (landed, or how to look), never "aborted",
                # which would have the command run again and record the same thing twice.
                if (error := app.interrupted()) is None:
                    raise
                raise error from None
            finally:
                app.close()
            if data is not None:
                emit_json(data)
            say_stale(app)

        return (group.command if group else click.command)(name)(run)

    return decorate


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print ``message`` for people, every control character spelled out: commands print through here."""
    click.echo(escaped(message), err=err, nl=nl)


def say(app: AppContext, *lines: str) -> None:
    """Print lines for people unless ``--quiet``."""
    for line in () if app.quiet else lines:
        echo(line)


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON, non-ASCII readable, control characters and bidi marks ``\\u``-escaped."""
    click.echo(escaped(json.dumps(data, indent=2, ensure_ascii=False, default=str), in_json=True))


class Pager(NamedTuple):
    """A read an agent calls as a gh-aw tool: next steps as commands or tool calls (``--hints``), output paged."""

    hints: Hints
    max_chars: int | None
    offset: int
    tool: str  # the gh-aw tool that is this command

    def echo(self, text: str | list[str], command: str, **inputs: Any) -> None:
        """Print ``text`` (or lines) from the offset, at most max_chars characters, then the call for the rest."""
        text = text if isinstance(text, str) else "".join(line + "\n" for line in text)
        shown, following = page(text, max_chars=self.max_chars or max(len(text), 1), offset=self.offset)
        if shown:
            echo(shown, nl=not shown.endswith("\n"))
        if following is not None:
            command = f"{command} --max-chars {self.max_chars}"
            echo(f"[statefile] more: {self.hints.more(self.tool, command, following, **inputs)}")


def reader_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--hints``, ``--max-chars`` and ``--offset``, given to ``NAME_cmd`` (a gh-aw tool too) as one ``pager``."""
    tool = dict(expand=TOOL_EXPAND, history=TOOL_HISTORY, render=TOOL_VIEW, search=TOOL_SEARCH)[fn.__name__[:-4]]

    @functools.wraps(fn)
    def run(app: AppContext, *args: Any, hint_style: str, max_chars: int | None, offset: int, **kwargs: Any) -> Any:
        return fn(app, *args, pager=Pager(hints_of(app, hint_style), max_chars, offset, tool), **kwargs)

    click.option("--offset", type=WholeNumber(0), default=0, help="Start at this character.")(run)
    click.option("--max-chars", type=WholeNumber(200), help="Print at most this many characters, then one line "
                 "saying how to get the rest.")(run)  # fmt: skip
    return click.option("--hints", "hint_style", type=click.Choice(HINT_STYLES), default="cli", show_default=True,
                        help="Name next steps as commands, or as the gh-aw agent's tool calls.")(run)  # fmt: skip


@contextmanager
def without_checkout(app: AppContext) -> Iterator[AppContext]:
    """``app``, with a scratch bare repository when a job without a checkout (gh-aw, MCP) gives a remote URL."""
    remote = app.config().remote.value if app.folder is None and not app.repo_memory else None
    if app.repository() is not None or not (remote and is_remote_url(remote)):
        yield app
        return
    import tempfile  # only jobs without a checkout pay for it

    with tempfile.TemporaryDirectory(prefix="statefile-") as scratch:
        init_bare(Path(scratch) / "memory.git")
        yield app.with_repository(Path(scratch) / "memory.git")


def hints_of(app: AppContext, style: str) -> Hints:
    """Next-step hints: tool calls, or commands repeating where the memory is (credentials redacted)."""
    if style != "cli":
        return TOOLS
    given = {"--dir": app.folder, "--remote": app.remote, "--branch": app.branch, "--repo": app.repo}
    words = ["statefile", *(["--repo-memory"] if app.repo_memory else [])]
    words += [word for flag, value in given.items() if value is not None for word in (flag, redact(str(value)))]
    return Hints(prefix=shlex.join(words))


def plain(value: Any) -> str:
    """``value`` as a person reads it: ``—`` for none, ``yes``/``no``, a list as ``a, b``, numbers without ``.0``."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value == value and abs(value) < 1e15:  # every digit, never an exponent
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(map(plain, sorted(value, key=str) if isinstance(value, (set, frozenset)) else value)) or "—"
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {plain(item)}" for key, item in value.items()) or "—"
    return str(value)


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide characters (emoji, CJK) count 2, combining marks 0."""
    shown = [ch for ch in text if not unicodedata.combining(ch) and unicodedata.category(ch) not in ("Mn", "Me", "Cf")]
    return len(shown) + sum(unicodedata.east_asian_width(ch) in ("W", "F") for ch in shown)


def fit(text: str, width: int) -> str:
    """``text`` cut with ``…`` to ``width`` terminal columns."""
    return text if display_width(text) <= width else text[: width - 1] + "…"


def table(
    rows: Iterable[Sequence[Any]], headers: Sequence[str], *, right: Sequence[int] | None = None, fill: bool = False
) -> list[str]:
    """Aligned lines, the header first: ``right`` (else numeric) columns right-aligned, ``fill`` cuts the last one."""
    raw = [list(row) for row in rows]
    cells = [[escaped(plain(value)) for value in row] for row in raw]
    if right is None:
        kinds = ({type(value) for value in column if value is not None} for column in zip(*raw, strict=False))
        right = [c for c, types in enumerate(kinds) if types and types <= {int, float, Decimal}]
    widths = [max(map(display_width, column)) for column in zip_longest(headers, *cells, fillvalue="")]
    room = shutil.get_terminal_size((120, 24)).columns - sum(widths[:-1]) - 2 * (len(widths) - 1)
    for row in cells if fill else ():
        row[-1] = fit(row[-1], max(20, room))

    def line(values: Sequence[str]) -> str:
        padded = ((cell, " " * (widths[c] - display_width(cell))) for c, cell in enumerate(values[: len(headers)]))
        return "  ".join(pad + cell if c in right else cell + pad for c, (cell, pad) in enumerate(padded)).rstrip()

    return [line(list(headers)), *(line(row) for row in cells)]
