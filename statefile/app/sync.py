"""``statefile sync``: bring a local memory branch and the remote's together without losing either side.

A local branch gets commits the remote lacks when someone records without ``--remote`` (a CI clone, a laptop).
Three cases:

- the remote lacks the branch, or the local branch is simply ahead: the local commits are pushed as they are
  (never forced);
- the local branch is behind: the fetch that opened the store already fast-forwarded it — nothing to do;
- they diverged: the local-only commits are **replayed** onto the remote's tip, oldest first.  The local branch is
  first kept under ``refs/statefile/kept/<branch>/<time>`` and moved to the remote's tip, then each local-only
  commit is applied through ordinary writes:

  * a ``record`` commit is recorded again from the entry it wrote (status, metric, change, notes, commit, run URL,
    CI fix attempts, time, its lesson), so it gets the next free iteration number on the remote's history and the
    Machine State follows the upstream rules from there;
  * any other change to a file is taken when the remote did not change that file since (a three-way check on the
    whole file); when both changed it, the remote's version stays and the local version goes, verbatim, into the
    program's archive (``archive/{program}/``) with a note saying where it came from.

Nothing is lost: every local text ends up in the file, in the archive, or (if a step fails) under the kept ref,
which the error names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any

from statefile.app.writing import restore_heading, restoring_heading
from statefile.defaults import SHARED_PROGRAM
from statefile.errors import StatefileError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.model.history import Iteration
from statefile.policy.compaction import CompactionPolicy, compact
from statefile.policy.rules import UPSTREAM_STATUSES, RecordRequest, record, recorded_iteration
from statefile.store import Change
from statefile.store.git.store import GitStore
from statefile.store.names import is_program_name

_RECORD_MESSAGE = re.compile(r"^statefile: record iteration (\d+) of (\S+)")
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

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"action": self.action, "commits": self.commits, "steps": self.steps, "kept": self.kept,
                "commit": self.tip}  # fmt: skip


def sync_branch(store: GitStore, policy: CompactionPolicy, *, now: datetime, dry_run: bool = False) -> SyncOutcome:
    """Reconcile the local branch with the remote's (see the module docstring); ``dry_run`` changes nothing."""
    if store.remote is None:
        raise UsageError("sync reconciles the local branch with a remote; pass --remote NAME (e.g. --remote origin)")
    state = store.branch_state()
    if state.local is None or state.ahead == 0:
        return SyncOutcome("nothing", tip=state.tracking or state.local)
    commits = store.local_only_commits()
    if not state.diverged:
        steps = [f"push {commit[:10]} {_subject(message)}" for commit, _, message, _ in commits]
        tip = None if dry_run else store.publish()
        return SyncOutcome("pushed", len(commits), steps, tip=tip)
    if dry_run:
        steps = [f"replay {commit[:10]} {_subject(message)}" for commit, _, message, _ in commits]
        return SyncOutcome("replayed", len(commits), steps)
    kept = f"refs/statefile/kept/{store.branch}/{now.strftime('%Y%m%dT%H%M%SZ')}"
    store.set_aside_local(kept)
    outcome = SyncOutcome("replayed", len(commits), kept=kept)
    for commit, parent, message, paths in commits:
        try:
            outcome.steps.extend(_replay(store, policy, commit, parent, message, paths, now=now))
        except StatefileError as exc:
            raise type(exc)(
                f"sync stopped at local commit {commit[:10]} ({_subject(message)}): {exc} — the local-only commits "
                f"are kept at {kept} (`git log {kept}`); the ones before it were replayed"
            ) from None
    outcome.tip = store.tip()
    return outcome


def _subject(message: str) -> str:
    return message.splitlines()[0] if message else ""


def _replay(
    store: GitStore,
    policy: CompactionPolicy,
    commit: str,
    parent: str | None,
    message: str,
    paths: list[str],
    *,
    now: datetime,
) -> list[str]:
    steps: list[str] = []
    recorded = _RECORD_MESSAGE.match(message)
    record_program = recorded.group(2) if recorded else None
    for path in paths:
        archive = _ARCHIVE_PATH.match(path)
        if record_program is not None and archive and archive.group(1) == record_program:
            continue  # what that record's compaction archived is still in the file or archive it came from
        if recorded and path == f"{record_program}.md":
            steps.append(_replay_record(store, policy, commit, parent, int(recorded.group(1)), path, now=now))
            continue
        steps.append(_replay_file(store, commit, parent, path))
    return steps


def _replay_record(
    store: GitStore,
    policy: CompactionPolicy,
    commit: str,
    parent: str | None,
    number: int,
    path: str,
    *,
    now: datetime,
) -> str:
    program = path[: -len(".md")]
    policy = replace(policy, program=program)
    new_text = store.file_at(commit, path)
    old_text = store.file_at(parent, path) if parent else None
    entry = _entry(new_text, number)
    if entry is None or new_text is None:
        return _replay_file(store, commit, parent, path)
    request = _request(entry, parse(new_text), parse(old_text) if old_text is not None else None)

    def apply(doc: StateDocument | None) -> Change[int]:
        recorded = record(doc, request, program=program, now=now)
        got = recorded_iteration(recorded)
        result = compact(recorded, policy)
        return Change(
            restore_heading(result.document),
            archive=result.archive,
            archive_label=f"compaction of {program}.md while replaying iteration {number}",
            message=f"statefile: record iteration {got} of {program} (replayed local iteration {number}, "
            f"{commit[:10]})",
            detail=got,
        )

    landed = store.update(program, apply, f"statefile: replay a record of {program}")
    return f"recorded local iteration {number} of {program} again as iteration {landed.detail} ({commit[:10]})"


def _entry(text: str | None, number: int) -> Iteration | None:
    if text is None:
        return None
    return next((e for e in parse(text).iterations if number in e.covers), None)


def _request(entry: Iteration, new: StateDocument, old: StateDocument | None) -> RecordRequest:
    """The record request that wrote ``entry`` (``new`` is the file after it, ``old`` before)."""
    metric: Decimal | None = None
    if entry.metric:
        try:
            metric = Decimal(entry.metric.replace(",", ""))
        except InvalidOperation:
            metric = None
        if metric is not None and not metric.is_finite():
            metric = None
    at = None
    if entry.when:
        try:
            at = datetime.fromisoformat(entry.when.replace(" UTC", "").replace("Z", "").strip()).replace(
                tzinfo=timezone.utc
            )
        except ValueError:
            at = None
    attempts = _CI_ATTEMPTS.match(entry.fields.get("ci fix attempts", ""))
    before = {item.text for item in old.list_items("lessons")} if old is not None else set()
    added = [item.text for item in new.list_items("lessons") if item.text not in before]
    lesson = added[0].strip().lstrip("-*+").strip() if added else None
    pr = new.machine_state.get("pr")
    old_pr = old.machine_state.get("pr") if old is not None else None
    pr_number = int(str(pr).lstrip("#")) if pr != old_pr and pr and str(pr).lstrip("#").isdigit() else None
    status = entry.status or "error"
    return RecordRequest(
        status=status,
        metric=metric,
        change=entry.change,
        notes=entry.notes,
        commit=entry.commit,
        run_url=entry.run_url,
        pr=pr_number,
        ci_fix_attempts=int(attempts.group(1)) if attempts else 0,
        lesson=lesson,
        at=at,
        new_status=status not in UPSTREAM_STATUSES,
    )


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
        raise UsageError(
            f"{path} changed on both sides and is not a program's file, so it has no archive to keep the local "
            "version in; reconcile it by hand"
        )
    label = f"local-only version of {path} from commit {commit[:10]}, kept by sync (the remote changed it too)"
    if path.startswith("archive/") and old is not None and new.startswith(old):
        label = f"archive text appended by local commit {commit[:10]}, kept by sync"
        text = new[len(old) :]
    else:
        text = new

    def apply(doc: StateDocument | None) -> Change:
        if doc is None:
            raise UsageError(f"{owner}.md is gone from the remote; the local version of {path} cannot be archived")
        return Change(doc, archive=text, archive_label=label)

    store.update(owner, restoring_heading(apply), f"statefile: sync keeps the local version of {path}")
    return f"{path}: kept the remote's version; the local one is in archive/{owner}/ ({commit[:10]})"


def _owner(path: str) -> str | None:
    """The program whose archive can hold a local version of ``path`` (``perf.md``, ``archive/perf/…``)."""
    archive = _ARCHIVE_PATH.match(path)
    name = archive.group(1) if archive else path[:-3] if path.endswith(".md") and "/" not in path else None
    if name is None or name == SHARED_PROGRAM or not is_program_name(name):
        return None
    return name
