"""Backups: every program's memory as one JSON export, and importing one back byte for byte (apart from the read
and write use cases: the export's checksums load hashlib, which the scheduler's pre-step should not)."""

from __future__ import annotations

from dataclasses import dataclass

from statefile.app.writing import restore_heading, restoring_heading
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import ConflictError, NotFoundError, UsageError
from statefile.model.document import StateDocument
from statefile.model.text import encode
from statefile.numbers import number_text, plural
from statefile.store import GitStore, Store
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
    """Write ``files`` as one commit (files that exist with other content only with ``force``; names differing only
    in case never), then restore drifted Machine State headings, a commit each, so the import commit is the backup
    exactly."""
    existing = store.read_all()
    _refuse_case_twins(store, files, existing)
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
    commit = None
    if changed:
        commit = store.write_files(changed, f"statefile: import {plural(len(changed), 'file')}").commit
    restored = []
    for name in (path[: -len(".md")] for path in states):
        if not is_program_name(name) or name == SHARED_PROGRAM:
            continue
        doc = store.read(name)
        if doc is not None and restore_heading(doc) is not doc:
            store.update(name, restoring_heading(_same), f"statefile: restore the Machine State heading of {name}")
            restored.append(name)
    over = sorted(path for path in states if len(encode(files[path])) > budget)
    return ImportOutcome(len(files), sorted(changed), commit, over, restored)


def _refuse_case_twins(store: Store, files: dict[str, str], existing: dict[str, str]) -> None:
    """Refused even with --force: overwriting replaces a file, but a name differing only in case adds a second."""
    twins = case_twins([path for path in files if path not in existing], existing)
    if not twins:
        return
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


def _same(doc: StateDocument | None) -> StateDocument:
    if doc is None:
        raise NotFoundError("the imported file disappeared before its heading could be restored; run import again")
    return doc
