"""What an agent reads: its memory within a budget (render), how full it is (status), and search across it all.

Apart from :mod:`statefile.cli.read`: the views cost imports the scheduler's pre-step does not need.
"""

from __future__ import annotations

import shlex
import sys

import click

from statefile.app.context import AppContext
from statefile.app.reading import all_status, render_program, search_memory
from statefile.cli.run import shown
from statefile.cli.support import echo, echo_page, emit_json, example, hints_of, pass_app, reader_options, say
from statefile.cli.types import whole_number
from statefile.model.text import clip
from statefile.views.hints import TOOL_SEARCH, TOOL_VIEW
from statefile.views.render import DEFAULT_BUDGET, DEFAULT_LEVEL, LEVELS, MIN_BUDGET
from statefile.views.search import hit_dict, hit_line
from statefile.views.status import pressure_lines


@click.command("render")
@click.argument("program")
@click.option("--budget", type=whole_number(MIN_BUDGET), default=DEFAULT_BUDGET, show_default=True,
              help="Characters at most.")  # fmt: skip
@click.option("--level", type=click.Choice(LEVELS), default=DEFAULT_LEVEL, show_default=True)
@reader_options
@example("statefile render perf --budget 8000", "statefile render perf --level index",
         "statefile render perf --level core --budget 3000 --hints tools")  # fmt: skip
@pass_app
def render_cmd(
    app: AppContext, program: str, budget: int, level: str, hint_style: str, max_chars: int | None, offset: int
) -> None:
    """Print the view of PROGRAM's memory an agent should read, never longer than --budget characters.

    Machine State and Current Priorities always; then newest entries, lessons, foreclosed avenues and ranges
    by a fixed drop order (--level core: what a gh-aw agent reads first); the last line says what was left out
    and how to get it.
    """

    hints = hints_of(app, hint_style)
    view = render_program(app.reader(), program, budget=budget, level=level, hints=hints)
    if app.as_json:
        emit_json({"program": program, "level": level, "budget": budget, "chars": view.chars,
                   "omitted": view.omitted, "text": view.text})  # fmt: skip
        return
    command = f"render {program} --level {level} --budget {budget} --max-chars {max_chars}"
    echo_page(view.text, max_chars=max_chars, offset=offset,
              more=lambda at: hints.more(TOOL_VIEW, command, at, level=level))  # fmt: skip


@click.command("status")
@click.argument("program", required=False)
@example("statefile status perf --json")
@pass_app
def status_cmd(app: AppContext, program: str | None) -> None:
    """Pressure at a glance: size and % of budget, tokens per section, counts, next-record forecast."""

    # The sparkline is for people at a terminal: piped or --json output stays data.
    found = all_status(app.reader(), program, app.config(), app.globs, trends=not app.as_json and sys.stdout.isatty())
    if app.as_json:
        broken = {name: {"status": "unreadable", "error": why} for name, why in found.unreadable.items()}
        emit_json(found.reports[program] if program else dict(sorted({**found.reports, **broken}.items())))
        return
    for name in sorted({*found.reports, *found.unreadable}):
        if name in found.unreadable:
            echo(f"{name}: unreadable: {shown(found.unreadable[name])}")
            continue
        lines = pressure_lines(found.reports[name], program=name)
        if found.trends.get(name):
            lines.insert(1, found.trends[name])
        echo("\n".join(lines))


@click.command("search")
@click.argument("query")
@click.option("--program", help="Only this program (and its archive).")
@click.option("--limit", "-n", type=whole_number(1), default=20, show_default=True)
@reader_options
@example('statefile search "radix sort" --program perf')
@pass_app
def search_cmd(
    app: AppContext, query: str, program: str | None, limit: int, hint_style: str, max_chars: int | None, offset: int
) -> None:
    """Search every program's file and archive (and _shared.md), best matches first.

    Whole words, case-insensitive (a term ending in * matches word starts: cach*); each result names the file,
    line, section and iteration it comes from; older archived copies of a range line are folded into one result.
    """

    hints = hints_of(app, hint_style)
    hits = search_memory(app.reader(), query, program=program, limit=limit)
    if app.as_json:
        emit_json([hit_dict(hit) for hit in hits])
        return
    if not hits:
        say(app, f"no matches for {shown(repr(clip(query, 200)))}")
        return
    lines = [hit_line(hit) for hit in hits]
    first = next((hit for hit in hits if hit.iteration is not None), None)
    if first is not None and first.iteration is not None and not app.quiet:
        lines.append(f"whole entries: {hints.expand(first.program, first.iteration)}")
    scope = f" --program {program}" if program else ""
    command = f"search {shlex.quote(clip(query, 200))}{scope} --limit {limit} --max-chars {max_chars}"
    echo_page("".join(line + "\n" for line in lines), max_chars=max_chars, offset=offset,
              more=lambda at: hints.more(TOOL_SEARCH, command, at, query=query))  # fmt: skip
