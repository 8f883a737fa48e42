"""``statefile sync``: bring a local memory branch and the remote's together without losing either side: pushed
when simply ahead; when diverged, the local branch is kept under ``refs/statefile/kept/…`` and each local-only
commit replayed onto the remote's tip (a record, found by its trailers, is recorded again)."""

from __future__ import annotations

import re
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

from statefile.app.context import AppContext
from statefile.app.writing import (
    ITERATION_TRAILER,
    PROGRAM_TRAILER,
    compaction_policy,
    record_update,
    restoring_heading,
)
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import StatefileError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.model.history import Iteration
from statefile.policy.compaction import CompactionPolicy
from statefile.policy.rules import UPSTREAM_STATUSES, RecordRequest
from statefile.store import Change
from statefile.store.git.store import GitStore
from statefile.store.names import is_program_name

_ARCHIVE_PATH = re.compile(r"^archive/([^/]+)/")
_CI_ATTEMPTS = re.compile(r"^\s*(\d+)")


@dataclass
class SyncOutcome:
    """What ``sync`` did: ``action`` is ``nothing``, ``pushed`` or ``replayed``; ``steps`` say what happened to each
    local-only commit; ``kept`` is the ref that keeps the local commits after a replay."""

    action: str
    commits: int = 0
    steps: list[str] = field(default_factory=list)
    kept: str = ""
    tip: str | None = None
    branch: str = ""
    remote: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"action": self.action, "commits": self.commits, "steps": self.steps, "kept": self.kept,
                "commit": self.tip}  # fmt: skip


def sync(app: AppContext, *, dry_run: bool = False) -> SyncOutcome:
    """``statefile sync`` on the run's store (a git branch with a remote); ``dry_run`` changes nothing."""
    store = app.store()
    if not isinstance(store, GitStore):
        raise UsageError("sync works on a branch with --remote; a --dir folder has nothing to sync")
    if store.remote is None:
        raise UsageError("sync reconciles the local branch with a remote; pass --remote NAME (e.g. --remote origin)")
    now = datetime.now(timezone.utc)
    policy = compaction_policy(app.config(), now=now)
    outcome_of = partial(SyncOutcome, branch=store.branch, remote=store.remote)
    state = store.branch_state()
    if state.local is None or state.ahead == 0:
        return outcome_of("nothing", tip=state.tracking or state.local)
    commits = store.local_only_commits()
    if not state.diverged or dry_run:
        verb = "push" if not state.diverged else "replay"
        steps = [f"{verb} {commit[:10]} {_subject(message)}" for commit, _, message, _ in commits]
        tip = None if dry_run else store.publish()
        return outcome_of("pushed" if not state.diverged else "replayed", len(commits), steps, tip=tip)
    kept = f"refs/statefile/kept/{store.branch}/{now.strftime('%Y%m%dT%H%M%SZ')}"
    store.set_aside_local(kept)
    outcome = outcome_of("replayed", len(commits), kept=kept)
    for commit, parent, message, paths in commits:
        try:
            program = next(iter(store.trailers(commit, PROGRAM_TRAILER)), None)
            number = next((int(n) for n in store.trailers(commit, ITERATION_TRAILER) if n.isdigit()), None)
            for path in paths:
                archive = _ARCHIVE_PATH.match(path)
                if program is not None and archive and archive.group(1) == program:
                    continue  # what that record's compaction archived is still in the file or archive it came from
                if number is not None and path == f"{program}.md":
                    outcome.steps.append(_replay_record(store, policy, commit, parent, number, path, now=now))
                else:
                    outcome.steps.append(_replay_file(store, commit, parent, path))
        except StatefileError as exc:
            raise type(exc)(
                f"sync stopped at local commit {commit[:10]} ({_subject(message)}): {exc} — the local-only commits "
                f"are kept at {kept} (`git log {kept}`); the ones before it were replayed"
            ) from None
    outcome.tip = store.tip()
    return outcome


def _subject(message: str) -> str:
    return message.splitlines()[0] if message else ""


def _replay_record(store: GitStore, policy: CompactionPolicy, commit: str, parent: str | None, number: int, path: str,
                   *, now: datetime) -> str:  # fmt: skip
    program = path.removesuffix(".md")
    new_text = store.file_at(commit, path)
    old_text = store.file_at(parent, path) if parent else None
    entry = next((e for e in parse(new_text).iterations if number in e.covers), None) if new_text else None
    if entry is None or new_text is None:
        return _replay_file(store, commit, parent, path)
    request = _request(entry, parse(new_text), parse(old_text) if old_text is not None else None)
    note = f"replayed local iteration {number} ({commit[:10]})"
    landed = store.update(program, record_update(store, program, request, policy, now=now, create=True, note=note))
    got = landed.detail.iteration if landed.detail else None
    return f"recorded local iteration {number} of {program} again as iteration {got} ({commit[:10]})"


def _request(entry: Iteration, new: StateDocument, old: StateDocument | None) -> RecordRequest:
    """The record request that wrote ``entry`` (``new`` is the file after it, ``old`` before)."""
    metric: Decimal | None = None
    at = None
    with suppress(InvalidOperation):
        metric = Decimal(entry.metric.replace(",", "")) if entry.metric else None
    with suppress(ValueError):
        at = datetime.fromisoformat(entry.when.replace(" UTC", "").replace("Z", "").strip()) if entry.when else None
    attempts = _CI_ATTEMPTS.match(entry.fields.get("ci fix attempts", ""))
    before = {item.text for item in old.list_items("lessons")} if old is not None else set()
    added = [item.text for item in new.list_items("lessons") if item.text not in before]
    pr = new.machine_state.get("pr")
    old_pr = old.machine_state.get("pr") if old is not None else None
    status = entry.status or "error"
    return RecordRequest(
        status=status, metric=metric if metric is not None and metric.is_finite() else None, change=entry.change,
        notes=entry.notes, commit=entry.commit, run_url=entry.run_url,
        pr=int(str(pr).lstrip("#")) if pr != old_pr and pr and str(pr).lstrip("#").isdigit() else None,
        ci_fix_attempts=int(attempts.group(1)) if attempts else 0,
        lesson=added[0].strip().lstrip("-*+").strip() if added else None,
        at=at.replace(tzinfo=timezone.utc) if at else None, new_status=status not in UPSTREAM_STATUSES,
    )  # fmt: skip


def _replay_file(store: GitStore, commit: str, parent: str | None, path: str) -> str:
    """A three-way replay of one file: take the local change when the remote left the file as it was."""
    old = store.file_at(parent, path) if parent else None
    new = store.file_at(commit, path)
    current = store.file_at(store.tip(), path)
    if current == old:
        if new == current:
            return f"{path}: unchanged ({commit[:10]})"
        store.write_files({path: new}, f"statefile: sync {path} from local commit {commit[:10]}")
        return f"{path}: took the local change ({commit[:10]})"
    if current == new:
        return f"{path}: already as the local commit left it ({commit[:10]})"
    if new is None:
        return f"{path}: kept the remote's version; the local commit {commit[:10]} deleted it"
    owner = _owner(path)
    if owner is None:
        raise UsageError(f"{path} changed on both sides and is not a program's file, so it has no archive to keep "
                         "the local version in; reconcile it by hand")  # fmt: skip
    label = f"local-only version of {path} from commit {commit[:10]}, kept by sync (the remote changed it too)"
    text = new
    if path.startswith("archive/") and old is not None and new.startswith(old):
        label, text = f"archive text appended by local commit {commit[:10]}, kept by sync", new[len(old) :]

    def apply(doc: StateDocument | None) -> Change[None]:
        if doc is None:
            raise UsageError(f"{owner}.md is gone from the remote; the local version of {path} cannot be archived")
        return Change(doc, archive=text, archive_label=label)

    store.update(owner, restoring_heading(apply), f"statefile: sync keeps the local version of {path}")
    return f"{path}: kept the remote's version; the local one is in archive/{owner}/ ({commit[:10]})"


def _owner(path: str) -> str | None:
    """The program whose archive can hold a local version of ``path`` (``perf.md``, ``archive/perf/…``)."""
    archive = _ARCHIVE_PATH.match(path)
    name = archive.group(1) if archive else path[:-3] if path.endswith(".md") and "/" not in path else None
    return None if name is None or name == SHARED_PROGRAM or not is_program_name(name) else name
