"""Export and import: the whole memory as one JSON document, and back as one commit."""

from __future__ import annotations

from dataclasses import dataclass

from statefile.app.writing import on_existing, restore_heading
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import ConflictError, UsageError
from statefile.model.text import encode
from statefile.numbers import number_text, plural
from statefile.store import Change, GitStore, Store
from statefile.store.exchange import dumps, export_json
from statefile.store.names import case_twins, is_program_name


def export_memory(store: Store) -> tuple[str, int]:
    """The export of every file in ``store`` as JSON text, and how many files it holds."""
    branch, commit = (store.branch, store.tip()) if isinstance(store, GitStore) else ("", None)
    data = export_json(store.read_all(), branch=branch, commit=commit)
    return dumps(data), len(data["files"])


@dataclass(frozen=True)
class ImportOutcome:
    """What an import wrote (paths), its commit, the state files over ``budget`` and the headings it restored."""

    files: int
    written: list[str]
    commit: str | None
    over_budget: list[str]
    headings_restored: list[str]


def import_files(store: Store, files: dict[str, str], *, budget: int, force: bool) -> ImportOutcome:
    """``files`` as one commit (overwriting only with ``force``), then drifted headings restored, a commit each."""
    existing = store.read_all()
    # Refused even with --force: overwriting replaces a file, but a name differing only in case adds a second.
    if twins := case_twins([path for path in files if path not in existing], existing):
        name, other = twins[0]
        there = any(p == other or (other.endswith("/") and p.startswith(other)) for p in existing)
        where = ("on the branch" if isinstance(store, GitStore) else "in the folder") if there else "in the export"
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
    states = [path for path in changed if "/" not in path and path.endswith(".md")]
    commit = store.write_files(changed, f"statefile: import {plural(len(changed), 'file')}").commit if changed else None
    restored = []
    for name in (n for n in (path[: -len(".md")] for path in states) if is_program_name(n) and n != SHARED_PROGRAM):
        if (doc := store.read(name)) is not None and restore_heading(doc) is not doc:
            restore = on_existing(store, name, Change)
            store.update(name, restore, f"statefile: restore the Machine State heading of {name}")
            restored.append(name)
    over = sorted(path for path in states if len(encode(files[path])) > budget)
    return ImportOutcome(len(files), sorted(changed), commit, over, restored)
