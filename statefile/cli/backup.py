"""Backups: ``export`` every program's memory as one JSON document, ``import`` it back byte for byte.

Apart from the read and write commands because the export format carries checksums (hashlib, OpenSSL), which
the scheduler's pre-step should not load.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from statefile.app.context import AppContext
from statefile.app.writing import restore_heading, restoring_heading
from statefile.cli.run import escaped
from statefile.cli.support import emit_json, example, pass_app, plural, say, unchanged
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import ConflictError, NotFoundError, UsageError
from statefile.integrations.autoloop import write_text_atomic
from statefile.model.document import StateDocument
from statefile.model.text import encode
from statefile.numbers import budget_text, number_text
from statefile.store import GitStore, Store
from statefile.store.atomic import IMPORT_LIMIT
from statefile.store.base import decode_text
from statefile.store.exchange import dumps, export_json, import_json, loads
from statefile.store.files import read_text_file
from statefile.store.names import case_twins, is_program_name


@click.command("export")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write here instead of stdout.")
@example("statefile export --out memory.json")
@pass_app
def export_cmd(app: AppContext, out: Path | None) -> None:
    """Export every program and archive as one JSON document."""

    store = app.reader()
    if isinstance(store, GitStore):
        data = export_json(store.read_all(), branch=store.branch, commit=store.tip())
    else:
        data = export_json(store.read_all(), branch="", commit=None)
    text = dumps(data)
    if out is None:
        # C1 controls and bidi marks \u-escaped (the same JSON, the same values); a file written with --out keeps
        # the export's bytes as dumps wrote them.
        click.echo(escaped(text, in_json=True), nl=False)
        return

    write_text_atomic(out, text)
    say(app, f"exported {plural(len(data['files']), 'file')} to {out}")


@click.command("import")
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Overwrite files that exist with different content.")
@example("statefile --branch memory/restored import memory.json")
@pass_app
def import_cmd(app: AppContext, source: Path, force: bool) -> None:
    """Import an export (all files, byte for byte) as one commit on the branch (or one write to --dir).

    Whatever its size: a file the export holds over the budget is restored as it was (a backup must restore),
    and the output says which files need 'statefile compact'.  A drifted Machine State heading is then restored in
    a second commit, so the import commit itself is the backup, exactly.  Files that already exist with different
    content are refused unless --force: an old export would otherwise roll state back and orphan archived
    iterations.  The branch is created if it does not exist.
    """

    raw = _read_stdin() if str(source) == "-" else _read(source)
    files = import_json(loads(raw))
    budget = app.config().max_bytes.value
    sizes = {path: len(encode(text)) for path, text in files.items()}
    largest = max(sizes.values(), default=0)
    if largest > budget:
        app = app.with_max_bytes(largest)  # restore what the export holds; compaction is a separate, later step
    store = app.writer(create=True)
    existing = store.read_all()
    # Refused even with --force: overwriting replaces a file, but a name differing only in case adds a second one.
    twins = case_twins([path for path in files if path not in existing], existing)
    if twins:
        name, other = twins[0]
        there = any(p == other or (other.endswith("/") and p.startswith(other)) for p in existing)
        where = "on the branch" if there else "in the export"
        if not isinstance(store, GitStore):
            where = where.replace("on the branch", "in the folder")
        more = f" (and {plural(len(twins) - 1, 'other name')})" if len(twins) > 1 else ""
        if name.rstrip("/") == other.rstrip("/"):  # perf.md and perf.md/x: a file and a folder of one name
            kinds = ("a folder", "a file") if name.endswith("/") else ("a file", "a folder")
            raise UsageError(
                f"{other.rstrip('/')} is {kinds[0]} in the export and {kinds[1]} {where}{more} — no tree or file "
                "system holds both; nothing was written — rename one of them"
            )
        raise UsageError(
            f"{name} in the export differs only in case from {other} {where}{more} — a checkout on macOS or Windows "
            "could hold only one of them; nothing was written — rename one of them"
        )
    if not force:
        clashes = sorted(path for path, text in files.items() if path in existing and existing[path] != text)
        if clashes:
            shown = ", ".join(clashes[:3]) + (f" and {number_text(len(clashes) - 3)} more" if len(clashes) > 3 else "")
            raise ConflictError(
                f"{plural(len(clashes), 'file')} {'exists' if len(clashes) == 1 else 'exist'} with different "
                f"content ({shown}); nothing was written — "
                "import into an empty branch (--branch NEW) or pass --force to overwrite"
            )
    changed = {path: text for path, text in files.items() if existing.get(path) != text}
    over = sorted(path for path in changed if sizes[path] > budget and "/" not in path and path.endswith(".md"))
    commit = None
    if changed:
        commit = store.write_files(changed, f"statefile: import {plural(len(changed), 'file')}").commit
    restored = _restore_headings(store, [path for path in changed if "/" not in path and path.endswith(".md")])
    if app.as_json:
        emit_json({"files": len(files), "written": sorted(changed), "commit": commit, "over_budget": over,
                   "headings_restored": restored})  # fmt: skip
        return
    if not changed:
        unchanged(app, f"all {plural(len(files), 'file')} of the export are already there, byte for byte")
    else:
        same = len(files) - len(changed)
        also = f" ({number_text(same)} already there)" if same else ""
        say(app, f"imported {plural(len(changed), 'file')}{also}" + (f" ({commit[:10]})" if commit else ""))
    for path in over:
        name = path[: -len(".md")]
        say(app, f"  {path} is over the budget at {budget_text(sizes[path], budget)}, as in the export: "
                 f"'statefile compact {name}' brings it under")  # fmt: skip
    for name in restored:
        say(app, f"  restored the ⚙️ Machine State heading of {name}.md (a separate commit after the import)")


def _restore_headings(store: Store, paths: list[str]) -> list[str]:
    """Restore a drifted Machine State heading in each imported state file, one commit each; the programs fixed."""
    fixed = []
    for path in paths:
        name = path[: -len(".md")]
        if not is_program_name(name) or name == SHARED_PROGRAM:
            continue
        doc = store.read(name)
        if doc is None or restore_heading(doc) is doc:
            continue
        store.update(name, restoring_heading(_same), f"statefile: restore the Machine State heading of {name}")
        fixed.append(name)
    return fixed


def _same(doc: StateDocument | None) -> StateDocument:
    if doc is None:
        raise NotFoundError("the imported file disappeared before its heading could be restored; run import again")
    return doc


def _read_stdin() -> str:
    data = sys.stdin.buffer.read(IMPORT_LIMIT + 1)
    if len(data) > IMPORT_LIMIT:
        raise UsageError(f"the export on stdin is over the {IMPORT_LIMIT:,} bytes statefile reads; nothing was read")
    return decode_text(data, "stdin")


def _read(path: Path) -> str:

    return read_text_file(path, bounded=False)  # an export holds every file of a branch
