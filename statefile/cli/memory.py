"""Agent-memory commands: render, status, search, lesson add/remove/restore/pin/promote, export, import."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from statefile.app.context import AppContext
from statefile.cli.support import emit_json, example, pass_app, say
from statefile.errors import NotFoundError

if TYPE_CHECKING:
    from statefile.model.document import StateDocument
    from statefile.store import Change


def _require(app: AppContext, program: str) -> StateDocument:
    doc = app.store().read(program)
    if doc is None:
        raise NotFoundError(f"no program '{program}'; 'statefile list' shows the programs")
    return doc


@click.command("render")
@click.argument("program")
@click.option("--budget", type=click.IntRange(min=200), default=8000, show_default=True, help="Characters at most.")
@click.option("--level", type=click.Choice(["index", "timeline", "full"]), default="full", show_default=True)
@example("statefile render perf --budget 8000    ·    statefile render perf --level index")
@pass_app
def render_cmd(app: AppContext, program: str, budget: int, level: str) -> None:
    """Print the view of PROGRAM's memory an agent should read, never longer than --budget characters.

    Machine State and Current Priorities always; then newest entries, lessons, foreclosed avenues and ranges
    by a fixed drop order; the last line says what was left out and how to get it.
    """
    from statefile.store.names import SHARED_PROGRAM
    from statefile.views.render import render_view

    doc = _require(app, program)
    shared = app.store().read(SHARED_PROGRAM) if program != SHARED_PROGRAM else None
    view = render_view(doc, program=program, budget=budget, level=level, shared=shared)
    if app.as_json:
        emit_json({"program": program, "level": level, "budget": budget, "chars": view.chars,
                   "omitted": view.omitted, "text": view.text})  # fmt: skip
    else:
        click.echo(view.text, nl=not view.text.endswith("\n"))


@click.command("status")
@click.argument("program", required=False)
@example("statefile status perf --json")
@pass_app
def status_cmd(app: AppContext, program: str | None) -> None:
    """Pressure at a glance: size and % of budget, tokens per section, counts, next-record forecast."""
    from statefile.views.status import count_archived_entries, pressure, pressure_lines

    store = app.store()
    from statefile.app.operations import state_files

    names = [program] if program else sorted(state_files(store, app.globs))
    reports = {}
    for name in names:
        doc = _require(app, name)
        parts = store.archive_parts(name)
        archived = count_archived_entries([store.read_archive(name, part) for part in parts])
        reports[name] = pressure(doc, max_bytes=store.max_bytes, archived_entries=archived, archive_parts=len(parts))
    if app.as_json:
        emit_json(reports[program] if program else reports)
        return
    for name, report in reports.items():
        for line in pressure_lines(report, program=name):
            click.echo(line)


@click.command("search")
@click.argument("query")
@click.option("--program", help="Only this program (and its archive).")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@example('statefile search "radix sort" --program perf')
@pass_app
def search_cmd(app: AppContext, query: str, program: str | None, limit: int) -> None:
    """Search every program's file and archive (and _shared.md), best matches first."""
    from statefile.views.search import hit_line, search

    hits = search(app.store().read_all(), query, program=program, limit=limit)
    if app.as_json:
        emit_json([hit.__dict__ for hit in hits])
        return
    if not hits:
        say(app, f"no matches for {query!r}")
    for hit in hits:
        click.echo(hit_line(hit))


@click.group("lesson")
def lesson_group() -> None:
    """Manage lessons: add, remove (to the archive, restorable), restore, pin, unpin, promote to _shared.md.

    \b
    Example:
      statefile lesson add perf "Radix beats comparison sort above 1k rows"
      statefile lesson remove perf 2 --reason "superseded"
    """


@lesson_group.command("add")
@click.argument("program")
@click.argument("text")
@click.option("--expires", type=click.DateTime(formats=["%Y-%m-%d"]), help="Archive it after this date.")
@click.option("--pin", is_flag=True, help="Pinned lessons are never pruned.")
@example('statefile lesson add perf "Radix beats comparison sort above 1k rows" --expires 2026-12-31')
@pass_app
def lesson_add(app: AppContext, program: str, text: str, expires: dt.datetime | None, pin: bool) -> None:
    """Add a lesson to PROGRAM (adding one that is already there changes nothing)."""
    from statefile.policy.lessons import add_lesson

    day = expires.date() if expires else None
    _edit_lessons(app, program, "add", lambda doc: add_lesson(doc, text, expires=day, pinned=pin))


@lesson_group.command("remove")
@click.argument("program")
@click.argument("selector")
@click.option("--reason", required=True, help="Why it is removed (kept in the archive with the lesson).")
@example('statefile lesson remove perf 3 --reason "superseded by the radix rewrite"')
@pass_app
def lesson_remove(app: AppContext, program: str, selector: str, reason: str) -> None:
    """Move lesson SELECTOR (1-based number or unique text) of PROGRAM to the archive, with a reason."""
    from statefile.model.archive import unwrap_chunk
    from statefile.policy.lessons import remove_lesson
    from statefile.store import Change

    today = dt.datetime.now(dt.timezone.utc).date()

    def apply(doc: StateDocument | None) -> Change:
        if doc is None:
            raise NotFoundError(f"no program '{program}'")
        new, chunk = remove_lesson(doc, _selector(selector), reason=reason, today=today)
        what, body = unwrap_chunk(chunk)
        return Change(new, archive=body, archive_label=what or f"lesson removed from {program}.md")

    commit = app.store().update(program, apply, f"statefile: remove a lesson from {program}").commit
    say(app, f"moved the lesson to archive/{program}/" + (f" ({commit[:10]})" if commit else ""))


@lesson_group.command("restore")
@click.argument("program")
@click.argument("selector", required=False)
@example("statefile lesson restore perf            # list restorable lessons\n  statefile lesson restore perf 1")
@pass_app
def lesson_restore(app: AppContext, program: str, selector: str | None) -> None:
    """Restore a removed lesson of PROGRAM from its archive (no SELECTOR: list the restorable ones)."""
    from statefile.model.archive import unwrap_chunk
    from statefile.policy.lessons import find_tombstone, restorable_lessons, restore_lesson, restored_chunk
    from statefile.store import Change

    store = app.store()
    if store.read_text(program) is None:
        raise NotFoundError(f"no program '{program}'; 'statefile list' shows the programs")
    texts = [store.read_archive(program, part) for part in store.archive_parts(program)]
    if selector is None:
        candidates = restorable_lessons(texts)
        if app.as_json:
            emit_json([{"number": n, **c.__dict__} for n, c in enumerate(candidates, 1)])
            return
        if not candidates:
            say(app, f"no removed lessons to restore for {program}")
        for number, candidate in enumerate(candidates, 1):
            click.echo(f"{number}. [{candidate.id}] {candidate.text.strip()}  — removed {candidate.removed}: "
                       f"{candidate.reason}")  # fmt: skip
        return
    today = dt.datetime.now(dt.timezone.utc).date()

    def apply(doc: StateDocument | None) -> Change:
        if doc is None:
            raise NotFoundError(f"no program '{program}'")
        # Re-read the archive as of this attempt: a concurrent restore of the same lesson must be refused.
        current = [store.read_archive(program, part) for part in store.archive_parts(program)]
        tombstone = find_tombstone(current, _selector(selector))
        what, body = unwrap_chunk(restored_chunk(tombstone, today=today))
        return Change(restore_lesson(doc, tombstone), archive=body, archive_label=what)

    commit = store.update(program, apply, f"statefile: restore a lesson of {program}").commit
    say(app, "restored the lesson" + (f" ({commit[:10]})" if commit else ""))


def _edit_lessons(app: AppContext, program: str, verb: str, edit: Callable[[StateDocument], StateDocument]) -> None:
    """Apply ``edit`` to an existing program's document in one commit and say so."""

    def apply(doc: StateDocument | None) -> StateDocument:
        if doc is None:
            raise NotFoundError(f"no program '{program}'; 'statefile list' shows the programs")
        return edit(doc)

    commit = app.store().update(program, apply, f"statefile: {verb} a lesson of {program}").commit
    say(app, f"{verb}: done" + (f" ({commit[:10]})" if commit else ""))


def _selector(selector: str) -> int | str:
    return int(selector) if selector.isdigit() else selector


@lesson_group.command("pin")
@click.argument("program")
@click.argument("selector")
@example('statefile lesson pin perf "typed arrays"')
@pass_app
def lesson_pin(app: AppContext, program: str, selector: str) -> None:
    """Pin lesson SELECTOR of PROGRAM so compaction never prunes it."""
    from statefile.policy.lessons import pin_lesson

    _edit_lessons(app, program, "pin", lambda doc: pin_lesson(doc, _selector(selector)))


@lesson_group.command("unpin")
@click.argument("program")
@click.argument("selector")
@example("statefile lesson unpin perf 2")
@pass_app
def lesson_unpin(app: AppContext, program: str, selector: str) -> None:
    """Unpin lesson SELECTOR of PROGRAM (compaction may prune it again)."""
    from statefile.policy.lessons import unpin_lesson

    _edit_lessons(app, program, "unpin", lambda doc: unpin_lesson(doc, _selector(selector)))


@lesson_group.command("promote")
@click.argument("program")
@click.argument("selector")
@example('statefile lesson promote perf "use for...of over typed arrays"')
@pass_app
def lesson_promote(app: AppContext, program: str, selector: str) -> None:
    """Copy lesson SELECTOR of PROGRAM into _shared.md, which `render` shows to every program."""
    from statefile.policy.lessons import promote_lesson
    from statefile.store.names import SHARED_PROGRAM

    doc = _require(app, program)

    def apply(shared: StateDocument | None) -> StateDocument:
        return promote_lesson(doc, _selector(selector), shared, program=program)

    commit = app.store().update(SHARED_PROGRAM, apply, f"statefile: promote a lesson of {program} to _shared.md").commit
    say(app, "promoted to _shared.md" + (f" ({commit[:10]})" if commit else ""))


@click.command("export")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write here instead of stdout.")
@example("statefile export --out memory.json")
@pass_app
def export_cmd(app: AppContext, out: Path | None) -> None:
    """Export every program and archive as one JSON document."""
    from statefile.store import GitStore
    from statefile.store.exchange import dumps, export_json

    store = app.store()
    if isinstance(store, GitStore):
        data = export_json(store.read_all(), branch=store.branch, commit=store.tip())
    else:
        data = export_json(store.read_all(), branch="", commit=None)
    text = dumps(data)
    if out is None:
        click.echo(text, nl=False)
        return
    from statefile.integrations.autoloop import write_text_atomic

    write_text_atomic(out, text)
    say(app, f"exported {len(data['files'])} files to {out}")


@click.command("import")
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Overwrite files that exist with different content.")
@example("statefile --branch memory/restored import memory.json")
@pass_app
def import_cmd(app: AppContext, source: Path, force: bool) -> None:
    """Import an export (all files, byte for byte) as one commit on the branch (or one write to --dir).

    Files that already exist with different content are refused unless --force: an old export would otherwise
    roll state back and orphan archived iterations.
    """
    from statefile.errors import ConflictError
    from statefile.store.exchange import import_json, loads

    raw = sys.stdin.read() if str(source) == "-" else _read(source)
    files = import_json(loads(raw))
    store = app.store()
    if not force:
        existing = store.read_all()
        clashes = sorted(path for path, text in files.items() if path in existing and existing[path] != text)
        if clashes:
            shown = ", ".join(clashes[:3]) + (f" and {len(clashes) - 3} more" if len(clashes) > 3 else "")
            raise ConflictError(
                f"{len(clashes)} file(s) exist with different content ({shown}); nothing was written — import into "
                "an empty branch (--branch NEW) or pass --force to overwrite"
            )
    commit = store.write_files(files, f"statefile: import {len(files)} files").commit
    say(app, f"imported {len(files)} files" + (f" ({commit[:10]})" if commit else ""))


def _read(path: Path) -> str:
    from statefile.store.files import read_text_file

    return read_text_file(path, bounded=False)  # an export holds every file of a branch


COMMANDS = [render_cmd, status_cmd, search_cmd, lesson_group, export_cmd, import_cmd]
