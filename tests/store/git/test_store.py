"""GitStore on real repositories in tmp dirs, with a bare repository as the remote; its write transaction:
conflicts re-applied, pushes rejected and retried, locks held, pushes whose outcome cannot be read at once, writers
killed at random, and its cost in git processes (counted, not timed: benchmarks/bench_git.py measures the time)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gitutil import git as repo_git
from gitutil import make_repos, run_statefile
from storeutil import (
    BRANCH,
    LOCAL,
    TRACKING,
    WORKER,
    appender,
    blob,
    clone,
    commit_count,
    files_at,
    fsck_clean,
    git,
    lines_of,
    make_remote,
    make_repo,
    one_error_line,
    rev,
    spawn,
)
from synthetic import synthetic_state

from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.errors import (
    EXIT_CHECK_FAILED,
    EXIT_GIT,
    EXIT_INVALID_DATA,
    BudgetError,
    ConflictError,
    GitError,
    NotFoundError,
    UsageError,
)
from statefile.model.document import StateDocument, parse
from statefile.store import Change, GitStore, Store
from statefile.store.git import store as git_store
from statefile.store.git.refs import Backoff, Outcome
from statefile.store.git.remote import Remote
from statefile.store.git.runner import Result

# -- local (no remote) -------------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def test_first_write_creates_an_orphan_branch(repo: Path) -> None:
    store = Store.open(repo)
    assert isinstance(store, GitStore)
    assert store.read("perf") is None and store.programs() == {} and store.tip() is None
    commit = store.update("perf", appender("- one"), "statefile: record iteration 1 of perf (✅)").commit
    assert rev(repo, LOCAL) == commit == store.tip()
    assert git(repo, "log", "--format=%P", "-1", commit).strip() == ""  # no parent: an orphan branch
    assert git(repo, "log", "--format=%B", "-1", commit).strip() == "statefile: record iteration 1 of perf (✅)"
    assert files_at(repo, LOCAL) == ["perf.md"]
    doc = store.read("perf")
    assert doc is not None and doc.render() == "# Autoloop: perf\n\n- one\n"
    assert git(repo, "show", f"{LOCAL}:perf.md") == "# Autoloop: perf\n\n- one\n"
    fsck_clean(repo)


def test_each_update_is_one_commit_whose_parent_is_the_tip_read(repo: Path) -> None:
    store = Store.open(repo)
    first = store.update("perf", appender("- one"), "statefile: one").commit
    result = store.update("perf", appender("- two"), "statefile: two")
    second = result.commit
    assert git(repo, "log", "--format=%P", "-1", second).strip() == first
    assert commit_count(repo, LOCAL) == 2
    assert store.read_text("perf") == "# Autoloop: perf\n\n- one\n- two\n"
    assert result.attempts == 1 and result.landed and result.files == ("perf.md",)
    assert result.document is not None and result.document.render() == store.read_text("perf")


def test_other_files_on_the_branch_are_kept(repo: Path) -> None:
    store = Store.open(repo)
    store.write_files({"_shared.md": "shared\n", "notes/readme.txt": "hi\n", "apm.md": "# apm\n"}, "import")
    store.update("perf", appender("- one"), "statefile: one")
    assert files_at(repo, LOCAL) == ["_shared.md", "apm.md", "notes/readme.txt", "perf.md"]
    assert git(repo, "show", f"{LOCAL}:notes/readme.txt") == "hi\n"


def test_unchanged_result_makes_no_commit(repo: Path) -> None:
    store = Store.open(repo)
    tip = store.update("perf", appender("- one"), "statefile: one").commit
    result = store.update("perf", lambda doc: doc or parse(""), "statefile: nothing")
    assert result.commit == tip and not result.landed and result.files == ()
    assert commit_count(repo, LOCAL) == 1


def test_fn_that_raises_writes_nothing(repo: Path) -> None:
    store = Store.open(repo)
    tip = store.update("perf", appender("- one"), "statefile: one").commit

    def boom(doc: StateDocument | None) -> StateDocument:
        raise RuntimeError("agent bug")

    with pytest.raises(RuntimeError, match="agent bug"):
        store.update("perf", boom, "statefile: boom")
    assert rev(repo, LOCAL) == tip


def test_a_result_over_budget_is_refused_and_nothing_changes(repo: Path) -> None:
    store = Store.open(repo, max_bytes=100)
    tip = store.update("perf", appender("- one"), "statefile: one").commit
    with pytest.raises(
        BudgetError, match=r"perf\.md would be over its budget at 1\d\d of 100 bytes.*statefile compact"
    ):
        store.update("perf", appender("x" * 120), "statefile: too big")
    assert rev(repo, LOCAL) == tip
    assert store.read_text("perf") == "# Autoloop: perf\n\n- one\n"


def test_archive_text_goes_in_the_same_commit(repo: Path) -> None:
    store = Store.open(repo)
    store.update("perf", appender("- one\n- two"), "statefile: two")

    def compact(doc: StateDocument | None) -> Change:
        assert doc is not None
        kept = doc.render().replace("- one\n", "")
        return Change(parse(kept), archive="- one\n", archive_label="compaction of perf.md: iterations 1–1")

    commit = store.update("perf", compact, "statefile: compact perf — iterations 1–1 to archive").commit
    changed = git(repo, "show", "--name-only", "--format=", commit).split()
    assert sorted(changed) == ["archive/perf/0001.md", "perf.md"]
    assert store.archive_parts("perf") == ["0001.md"]
    part = store.read_archive("perf", "0001.md")
    assert part.startswith("# Archive: perf (part 1)")
    assert "## Archived " in part and "— compaction of perf.md: iterations 1–1\n\n- one\n" in part
    assert store.read_text("perf") == "# Autoloop: perf\n\n- two\n"

    # Without a label the commit subject names the chunk; the next chunk is appended to the same part.
    store.update("perf", lambda d: Change(parse("# Autoloop: perf\n"), archive="- two\n"), "statefile: fold two")
    part = store.read_archive("perf", "0001.md")
    assert part.index("- one") < part.index("— statefile: fold two\n\n- two\n")
    with pytest.raises(NotFoundError, match=r"0002\.md"):
        store.read_archive("perf", "0002.md")


def test_archive_rolls_over_to_a_new_part_at_the_budget(repo: Path) -> None:
    store = Store.open(repo, max_bytes=600)
    store.update("perf", appender("- x"), "statefile: start")

    def fold(n: int) -> Callable[[StateDocument | None], Change]:
        return lambda doc: Change(doc or parse(""), archive=f"- old {n} " + "y" * 150)

    for n in range(6):
        store.update("perf", fold(n), f"statefile: fold {n}")
    parts = store.archive_parts("perf")
    assert len(parts) >= 2 and parts == sorted(parts)
    joined = "".join(store.read_archive("perf", p) for p in parts)
    assert all(f"- old {n} " in joined for n in range(6))
    assert all(len(store.read_archive("perf", p).encode()) <= 600 for p in parts)


def test_programs_lists_top_level_state_files_from_one_listing(repo: Path) -> None:
    store = Store.open(repo)
    texts = {"perf.md": "# perf ✅\n", "apm-go.md": "a" * 1000, "_shared.md": "s\n", "README.txt": "r\n",
             "archive/perf/0001.md": "# Archive\n"}  # fmt: skip
    store.write_files(texts, "statefile: import")
    assert store.programs() == {"perf": len("# perf ✅\n".encode()), "apm-go": 1000}


def test_read_all_returns_every_text_file(repo: Path) -> None:
    store = Store.open(repo)
    texts = {"perf.md": "p\n", "_shared.md": "s\n", "archive/perf/0001.md": "a\n"}
    store.write_files(texts, "statefile: import")
    git(repo, "branch", "-f", "scratch", LOCAL)
    assert store.read_all() == texts


def test_write_files_is_one_commit_and_none_deletes(repo: Path) -> None:
    store = Store.open(repo)
    store.write_files({"perf.md": "p\n", "apm.md": "a\n", "archive/apm/0001.md": "x\n"}, "statefile: import")
    commit = store.write_files(
        {"apm.md": None, "archive/apm/0001.md": None, "perf.md": "p2\n"}, "statefile: drop"
    ).commit
    assert commit_count(repo, LOCAL) == 2
    assert files_at(repo, commit) == ["perf.md"]  # the emptied archive folders are gone too
    with pytest.raises(BudgetError, match=r"big\.md is over the budget at 200 of 100 bytes \(200\.0%\)"):
        Store.open(repo, max_bytes=100).write_files({"big.md": "b" * 200}, "statefile: big")
    assert rev(repo, LOCAL) == commit


def test_log_lists_commits_touching_the_program_newest_first(repo: Path) -> None:
    store = Store.open(repo)
    store.update("perf", appender("- 1"), "statefile: record iteration 1 of perf (✅)")
    store.update("apm", appender("- 1"), "statefile: record iteration 1 of apm (❌)")
    store.update("perf", appender("- 2"), "statefile: record iteration 2 of perf (❌)\n\nbody line")
    entries = store.log("perf")
    assert [e.message for e in entries] == [
        "statefile: record iteration 2 of perf (❌)\n\nbody line",
        "statefile: record iteration 1 of perf (✅)",
    ]
    assert entries[0].commit == store.tip() and entries[0].when.tzinfo is not None
    assert entries[0].author == "statefile tests <tests@statefile.invalid>"
    assert len(store.log("perf", limit=1)) == 1 and store.log("nothing") == []


def test_the_users_head_index_and_dirty_work_tree_are_untouched(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    (work / "code.py").write_text("print('edited, not staged')\n")
    (work / "staged.txt").write_text("staged\n")
    git(work, "add", "staged.txt")
    (work / "untracked.md").write_text("# untracked\n")

    def snapshot() -> dict[str, bytes]:
        files = {p.relative_to(work).as_posix(): p.read_bytes() for p in work.rglob("*") if p.is_file()}
        keep = ("HEAD", "index", "config", "refs/heads/main")
        return {k: v for k, v in files.items() if not k.startswith(".git/") or k[5:] in keep}

    before = snapshot()
    status = git(work, "status", "--porcelain=v2", "--branch")
    local = Store.open(work)
    local.update("perf", appender("- local"), "statefile: local")
    remote_store = Store.open(work, remote="origin")
    remote_store.update("perf", appender("- pushed"), "statefile: pushed")
    remote_store.write_files({"_shared.md": "s\n"}, "statefile: shared")
    assert snapshot() == before
    assert git(work, "status", "--porcelain=v2", "--branch") == status
    assert git(remote, "show", f"{BRANCH}:perf.md").endswith("- local\n- pushed\n")


def test_a_checked_out_branch_is_refused(repo: Path) -> None:
    store = Store.open(repo)
    store.update("perf", appender("- one"), "statefile: one")
    git(repo, "checkout", "-q", BRANCH)
    with pytest.raises(UsageError, match="checked out"):
        store.update("perf", appender("- two"), "statefile: two")
    git(repo, "checkout", "-q", "main")
    git(repo, "worktree", "add", "-q", str(repo.parent / "linked"), BRANCH)
    with pytest.raises(UsageError, match=r"checked out in the work tree at .*linked"):
        store.update("perf", appender("- two"), "statefile: two")


def test_a_bare_repository_can_be_the_store(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    store = Store.open(bare)
    store.update("perf", appender("- one"), "statefile: one")
    assert git(bare, "show", f"{BRANCH}:perf.md").endswith("- one\n")


def test_missing_repository_and_remote_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="not inside a git repository"):
        Store.open(tmp_path)
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(NotFoundError, match="remote 'origin' is not configured"):
        Store.open(repo, remote="origin").fetch()  # said on first use: opening runs no git


# -- authors -----------------------------------------------------------------------------------------------------


def test_default_author_is_the_bot(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    commit = Store.open(repo).update("perf", appender("- one"), "statefile: one").commit
    assert git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", commit).strip() == (
        f"{BOT_NAME} <{BOT_EMAIL}>|{BOT_NAME} <{BOT_EMAIL}>"
    )


def test_env_and_explicit_authors(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commit = Store.open(repo).update("perf", appender("- one"), "statefile: env").commit
    assert git(repo, "log", "-1", "--format=%an|%cn", commit).strip() == "statefile tests|statefile tests"
    monkeypatch.delenv("GIT_COMMITTER_NAME")
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")
    store = Store.open(repo, author="Ada Lovelace <ada@example.com>")
    commit = store.update("perf", appender("- two"), "statefile: explicit").commit
    assert git(repo, "log", "-1", "--format=%an <%ae>|%ce", commit).strip() == (
        "Ada Lovelace <ada@example.com>|ada@example.com"
    )
    with pytest.raises(UsageError, match="Name <email"):
        Store.open(repo, author="no email here")


# -- remote-tracking refs and the remote -------------------------------------------------------------------------


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


def test_reads_work_from_a_remote_tracking_ref_only(tmp_path: Path, remote: Path) -> None:
    writer = clone(remote, tmp_path / "writer")
    Store.open(writer, remote="origin").update("perf", appender("- one"), "statefile: one")
    reader = clone(remote, tmp_path / "reader")
    assert rev(reader, LOCAL) is None and rev(reader, TRACKING) is not None
    store = Store.open(reader)  # no remote given: falls back to origin's tracking ref
    assert store.read_text("perf") == "# Autoloop: perf\n\n- one\n"
    assert store.programs() == {"perf": len("# Autoloop: perf\n\n- one\n")}
    assert store.tip() == rev(reader, TRACKING)
    # The first local write creates the local branch from the tracking ref.
    commit = store.update("perf", appender("- two"), "statefile: two").commit
    assert git(reader, "log", "--format=%P", "-1", commit).strip() == rev(reader, TRACKING)
    assert rev(reader, LOCAL) == commit


def test_first_push_creates_the_remote_branch(tmp_path: Path, remote: Path) -> None:
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    commit = store.update("perf", appender("- one"), "statefile: one").commit
    assert rev(remote, LOCAL) == commit == rev(work, LOCAL) == rev(work, TRACKING)
    assert git(remote, "log", "--format=%P", "-1", commit).strip() == ""
    fsck_clean(remote)


def test_local_commits_go_out_with_the_next_push_and_stale_local_branches_follow(tmp_path: Path, remote: Path) -> None:
    a_dir = clone(remote, tmp_path / "a")
    Store.open(a_dir).update("perf", appender("- offline"), "statefile: offline")  # local only
    a = Store.open(a_dir, remote="origin")
    a.update("perf", appender("- online"), "statefile: online")
    assert git(remote, "show", f"{BRANCH}:perf.md").endswith("- offline\n- online\n")
    assert commit_count(remote, LOCAL) == 2

    b_dir = clone(remote, tmp_path / "b")
    git(b_dir, "branch", BRANCH, TRACKING)  # a local branch that will fall behind
    a.update("perf", appender("- more"), "statefile: more")
    b = Store.open(b_dir, remote="origin")
    assert b.fetch() == rev(remote, LOCAL) == rev(b_dir, LOCAL)  # fast-forwarded
    b.update("perf", appender("- from b"), "statefile: from b")
    assert git(remote, "show", f"{BRANCH}:perf.md").endswith("- more\n- from b\n")


def test_diverged_local_and_remote_branches_are_not_overwritten(tmp_path: Path, remote: Path) -> None:
    a = Store.open(clone(remote, tmp_path / "a"), remote="origin")
    a.update("perf", appender("- shared"), "statefile: shared")
    b_dir = clone(remote, tmp_path / "b")
    Store.open(b_dir).update("perf", appender("- b offline"), "statefile: b offline")
    a.update("perf", appender("- a online"), "statefile: a online")
    before = rev(remote, LOCAL)
    with pytest.raises(ConflictError, match="diverged"):
        Store.open(b_dir, remote="origin").update("perf", appender("- b"), "statefile: b")
    assert rev(remote, LOCAL) == before


def test_a_store_with_a_remote_works_when_the_remote_lacks_the_branch_after_deletion(
    tmp_path: Path, remote: Path
) -> None:
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    store.update("perf", appender("- one"), "statefile: one")
    git(remote, "update-ref", "-d", LOCAL)
    assert store.fetch() is None and rev(work, TRACKING) is None
    # The local branch still holds the history: the next write pushes it back.
    store.update("perf", appender("- two"), "statefile: two")
    assert git(remote, "show", f"{BRANCH}:perf.md").endswith("- one\n- two\n")


def test_other_branch_names_work(repo: Path) -> None:
    store = Store.open(repo, branch="memory/other-loop")
    store.update("perf", appender("- one"), "statefile: one")
    assert rev(repo, "refs/heads/memory/other-loop") is not None and rev(repo, LOCAL) is None
    assert os.path.exists(repo / ".git") and store.branch == "memory/other-loop" and store.remote is None


def test_a_linked_work_tree_shares_the_branch(repo: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "feature", str(repo.parent / "feature"))
    store = Store.open(repo.parent / "feature")
    commit = store.update("perf", appender("- from a linked work tree"), "statefile: linked").commit
    assert rev(repo, LOCAL) == commit and Store.open(repo).read_text("perf") == store.read_text("perf")
    fsck_clean(repo)


@pytest.mark.parametrize(("option", "value"), [("max_bytes", 0), ("max_tries", 0), ("max_bytes", -5)])
def test_bad_limits_are_usage_errors(repo: Path, option: str, value: int) -> None:
    with pytest.raises(UsageError, match=option):
        Store.open(repo, **{option: value})  # type: ignore[arg-type]


def test_a_remote_given_by_a_relative_path_works(tmp_path: Path, remote: Path) -> None:
    work = make_repo(tmp_path / "work")
    git(work, "remote", "add", "origin", os.path.relpath(remote, work))
    commit = Store.open(work, remote="origin").update("perf", appender("- one"), "statefile: one").commit
    assert rev(remote, LOCAL) == commit


def test_a_corrupt_archive_tree_is_named_by_its_path(tmp_path: Path) -> None:
    """A tree that is there but unreadable: check said "is a tree, expected a tree", search and export blamed the
    top folder as missing."""
    repos = make_repos(tmp_path)
    work = repos.work
    assert run_statefile("-q", "init", "perf", cwd=work).returncode == 0
    hashed = subprocess.run(["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"], cwd=work,
                            input=b"100644 perf\0abc", capture_output=True, check=True)  # fmt: skip
    bad = hashed.stdout.decode().strip()
    blob = git(work, "rev-parse", "memory/autoloop:perf.md").strip()
    listing = f"100644 blob {blob}\tperf.md\n040000 tree {bad}\tarchive\n"
    made = subprocess.run(["git", "mktree"], cwd=work, input=listing, capture_output=True, text=True, check=True)
    commit = git(work, "commit-tree", made.stdout.strip(), "-p", "memory/autoloop", "-m", "damaged").strip()
    git(work, "update-ref", "refs/heads/memory/autoloop", commit)
    checked = run_statefile("check", cwd=work)
    assert checked.returncode == 1 and "damaged tree" in checked.stdout and "expected a tree" not in checked.stdout
    for args in (["search", "x"], ["export"], ["expand", "perf", "1"]):
        proc = run_statefile(*args, cwd=work)
        assert proc.returncode == 7 and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert f"archive (object {bad})" in proc.stderr and "damaged tree" in proc.stderr, (args, proc.stderr)
    assert git(work, "rev-parse", "refs/heads/memory/autoloop").strip() == commit


def point_branch(repo: Path, lines: list[str]) -> str:
    """Point the memory branch at a commit whose root tree is ``lines`` (``mktree --missing`` input)."""
    tree = git(repo, "mktree", "--missing", input="".join(f"{line}\n" for line in lines).encode()).strip()
    commit = git(repo, "commit-tree", tree, "-m", "crafted").strip()
    git(repo, "update-ref", LOCAL, commit)
    return commit


def test_entries_that_cannot_be_read_are_errors_for_every_command_that_goes_over_all(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): entries that cannot be read are errors for every command that goes over
    all."""
    repo = make_repo(tmp_path / "repo")
    head = rev(repo, "HEAD")
    missing = "1" * 40
    point_branch(
        repo,
        [
            f"100644 blob {blob(repo, synthetic_state('ok', 3, seed=1).encode())}\tok.md",
            f"100644 blob {missing}\tgone.md",  # ls-tree -l shows its size as BAD
            f"120000 blob {blob(repo, b'/etc/passwd')}\tlinked.md",
            f"160000 commit {head}\tsub.md",
            f"040000 tree {git(repo, 'mktree', input=b'').strip()}\tfolder.md",
        ],
    )
    reasons = {"gone": "missing from the repository", "linked": "symbolic link", "sub": "submodule",
               "folder": "folder"}  # fmt: skip
    with GitStore(repo) as store:
        assert store.programs() == {"ok": len(synthetic_state("ok", 3, seed=1).encode())}
        found = store.unreadable()
        assert sorted(found) == sorted(reasons) and all(reasons[n] in found[n] for n in reasons)
    checked = run_statefile("--json", "check", cwd=repo)
    assert checked.returncode == EXIT_CHECK_FAILED
    outcomes = {o["name"]: o for o in json.loads(checked.stdout)}
    assert outcomes["ok"]["ok"] and all(not outcomes[n]["ok"] for n in reasons)
    listed = run_statefile("--json", "list", cwd=repo)
    assert listed.returncode == 0
    statuses = {r["program"]: r["status"] for r in json.loads(listed.stdout)}
    assert sorted(statuses) == sorted([*reasons, "ok"]) and statuses["ok"] != "unreadable"
    assert all(statuses[name] == "unreadable" for name in reasons)
    compacted = run_statefile("compact", "--all", cwd=repo)
    assert compacted.returncode == EXIT_INVALID_DATA
    assert all(f"error: {name}:" in compacted.stderr for name in reasons)
    reported = run_statefile("report", "--all", cwd=repo)
    assert reported.returncode == 0 and set(json.loads(reported.stdout)["statefile"]["programs"]) >= set(reasons)
    for args in (["status"], ["show", "gone"], ["expand", "gone", "1"]):
        proc = run_statefile(*args, cwd=repo)
        assert proc.returncode in (0, EXIT_INVALID_DATA), (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


@pytest.mark.parametrize("missing", ["archive", "archive/perf"])
def test_a_missing_archive_tree_is_invalid_data_naming_its_path(tmp_path: Path, missing: str) -> None:
    """Missing blobs were exit 7 naming the path; missing trees were exit 6 "git mktree failed" or "git ls-tree
    failed" (record, search, export), or a message without the path (history)."""
    repo = make_repo(tmp_path / "repo")
    assert run_statefile("-q", "init", "perf", cwd=repo).returncode == 0
    state = git(repo, "rev-parse", f"{LOCAL}:perf.md").strip()
    gone = "1" * 40
    if missing == "archive":
        archive = gone
    else:
        archive = git(repo, "mktree", "--missing", input=f"040000 tree {gone}\tperf\n".encode()).strip()
    commit = point_branch(repo, [f"100644 blob {state}\tperf.md", f"040000 tree {archive}\tarchive"])
    commands = [["search", "x"], ["export"], ["history", "perf"]]
    if missing == "archive":  # the write carries the archive folder over by its id, which git checks
        commands.append(["record", "perf", "--status", "accepted"])
    for args in commands:
        proc = run_statefile(*args, cwd=repo)
        assert proc.returncode == EXIT_INVALID_DATA, (args, proc.stderr)
        line = one_error_line(proc)
        assert f"{missing} (object {gone}) on branch {BRANCH} is missing from the repository" in line, (args, line)
    assert rev(repo, LOCAL) == commit


def test_a_missing_blob_a_write_carries_over_is_invalid_data_naming_its_path(tmp_path: Path) -> None:
    """git mktree refuses a tree naming a missing object: that was exit 6 "git mktree failed"."""
    repo = make_repo(tmp_path / "repo")
    assert run_statefile("-q", "init", "perf", cwd=repo).returncode == 0
    state = git(repo, "rev-parse", f"{LOCAL}:perf.md").strip()
    commit = point_branch(repo, [f"100644 blob {state}\tperf.md", f"100644 blob {'2' * 40}\t_shared.md"])
    proc = run_statefile("record", "perf", "--status", "accepted", cwd=repo)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert f"_shared.md (object {'2' * 40}) on branch {BRANCH} is missing" in one_error_line(proc)
    assert rev(repo, LOCAL) == commit


def test_commits_use_the_identity_from_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As seen in issue 11: commits use the identity from git config."""
    repos = make_repos(tmp_path)
    repo_git("config", "user.name", "Config Person", cwd=repos.work)
    repo_git("config", "user.email", "config@example.invalid", cwd=repos.work)
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    assert run_statefile("init", "perf", cwd=repos.work).returncode == 0
    author = repo_git("log", "-1", "--format=%an <%ae>|%cn <%ce>", "memory/autoloop", cwd=repos.work).strip()
    assert author == "Config Person <config@example.invalid>|Config Person <config@example.invalid>"


def _retree(repo: Path, entries: list[tuple[str, str, str]], message: str) -> None:
    """Point the memory branch at a commit whose top tree is ``entries`` (mode, name, blob id) written as given:
    raw modes git's porcelain would never write, as other tools can."""
    raw = b"".join(f"{mode} {name}\0".encode() + bytes.fromhex(oid) for mode, name, oid in entries)
    tree = git(repo, "hash-object", "-w", "-t", "tree", "--literally", "--stdin", input=raw).strip()
    commit = git(repo, "commit-tree", tree, "-p", BRANCH, "-m", message).strip()
    git(repo, "update-ref", f"refs/heads/{BRANCH}", commit)


def test_a_file_of_a_non_canonical_mode_is_read_and_written_as_a_file(tmp_path: Path) -> None:
    """Cold review: a state file stored as 100600 (a tool's chmod) was "not a regular file" for render, show and
    record (exit 7) while list and check called it ok, and a write beside it made fast-import fail ("Corrupt
    mode").  Git reads every 100xxx mode as a regular file and writes it as 100644 or 100755."""
    work = make_repos(tmp_path).work
    assert run_statefile("record", "perf", "--create", "--status", "accepted", cwd=work).returncode == 0
    blob_id = git(work, "rev-parse", f"{BRANCH}:perf.md").strip()
    notes = git(work, "hash-object", "-w", "--stdin", input=b"notes\n").strip()
    _retree(work, [("100664", "notes.txt", notes), ("100600", "perf.md", blob_id)], "chmod by a tool")
    for args in (("list",), ("check",), ("render", "perf"), ("show", "perf")):
        ran = run_statefile(*args, cwd=work)
        assert ran.returncode == 0, (args, ran.stdout, ran.stderr)
    assert run_statefile("record", "perf", "--status", "accepted", cwd=work).returncode == 0
    listing = git(work, "ls-tree", BRANCH)
    assert "100644 blob" in listing and "100600" not in listing and "\tnotes.txt" in listing
    assert "Iteration Count | 2" in git(work, "show", f"{BRANCH}:perf.md")


def test_rewriting_identical_bytes_beside_an_old_mode_makes_no_commit(tmp_path: Path) -> None:
    """Cold review: writing a file's own bytes again landed a commit that only changed a sibling's 100664 mode to
    100644; a write that changes no file's bytes is no change."""
    work = make_repos(tmp_path).work
    assert run_statefile("record", "perf", "--create", "--status", "accepted", cwd=work).returncode == 0
    text = git(work, "show", f"{BRANCH}:perf.md")
    blob_id = git(work, "rev-parse", f"{BRANCH}:perf.md").strip()
    old = git(work, "hash-object", "-w", "--stdin", input=b"old\n").strip()
    _retree(work, [("100664", "old.txt", old), ("100644", "perf.md", blob_id)], "an old tool's mode")
    tip = git(work, "rev-parse", BRANCH).strip()
    with GitStore(work, BRANCH) as store:
        result = store.write_files({"perf.md": text}, "same bytes again")
    assert git(work, "rev-parse", BRANCH).strip() == tip, result


# -- the write transaction ------------------------------------------------------------------------------------


def test_a_concurrent_change_is_reapplied_never_overwritten(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo)
    other = Store.open(repo)
    store.update("perf", appender("- base"), "statefile: base")
    calls: list[str] = []

    def fn(doc: StateDocument | None) -> StateDocument:
        calls.append(doc.render() if doc else "")
        if len(calls) == 1:  # another writer lands between our read and our compare-and-swap
            other.update("perf", appender("- theirs"), "statefile: theirs")
        return appender("- ours")(doc)

    result = store.update("perf", fn, "statefile: ours")
    commit = result.commit
    assert len(calls) == 2 and "- theirs" in calls[1] and result.attempts == 2
    assert store.read_text("perf") == "# Autoloop: perf\n\n- base\n- theirs\n- ours\n"
    assert commit_count(repo, LOCAL) == 3 and rev(repo, LOCAL) == commit


def test_conflicts_that_never_stop_end_in_a_clear_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo, max_tries=3)
    other = Store.open(repo)
    store.update("perf", appender("- base"), "statefile: base")

    def fn(doc: StateDocument | None) -> StateDocument:
        other.update("perf", appender("- theirs"), "statefile: theirs")
        return appender("- ours")(doc)

    with pytest.raises(ConflictError, match="gave up after 3 tries"):
        store.update("perf", fn, "statefile: ours")
    text = store.read_text("perf") or ""
    assert "- ours" not in text and text.count("- theirs") == 3


def test_a_stale_ref_lock_is_reported_with_what_to_do(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo, max_tries=2)
    tip = store.update("perf", appender("- one"), "statefile: one").commit
    lock = repo / ".git" / "refs" / "heads" / "memory" / "autoloop.lock"
    lock.write_text("")  # what a git process killed while holding the lock leaves behind
    with pytest.raises(GitError, match=r"cannot lock refs/heads/memory/autoloop.*delete that file"):
        store.update("perf", appender("- two"), "statefile: two")
    assert rev(repo, LOCAL) == tip
    lock.unlink()
    store.update("perf", appender("- two"), "statefile: two")
    assert store.read_text("perf") == "# Autoloop: perf\n\n- one\n- two\n"


def test_messages_are_cleaned_and_empty_ones_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = Store.open(repo)
    commit = store.update("perf", appender("- one"), "  statefile: one   \n\n  detail  \n\n").commit
    assert git(repo, "cat-file", "commit", commit).endswith("\n\nstatefile: one\n\n  detail\n")
    with pytest.raises(UsageError, match="empty commit message"):
        store.update("perf", appender("- two"), "  \n ")


def test_a_rejected_push_fetches_reapplies_and_pushes_again(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    a = Store.open(clone(remote, tmp_path / "a"), remote="origin")
    b = Store.open(clone(remote, tmp_path / "b"), remote="origin")
    a.update("perf", appender("- base"), "statefile: base")
    calls = 0

    def fn(doc: StateDocument | None) -> StateDocument:
        nonlocal calls
        calls += 1
        if calls == 1:
            b.update("perf", appender("- b"), "statefile: b")
        return appender("- a")(doc)

    result = a.update("perf", fn, "statefile: a")
    commit = result.commit
    assert calls == 2 and result.attempts == 2
    assert git(remote, "show", f"{BRANCH}:perf.md") == "# Autoloop: perf\n\n- base\n- b\n- a\n"
    assert rev(remote, LOCAL) == commit and commit_count(remote, LOCAL) == 3


def test_when_tries_run_out_the_remote_is_left_as_it_was(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    a = Store.open(clone(remote, tmp_path / "a"), remote="origin", max_tries=2)
    b = Store.open(clone(remote, tmp_path / "b"), remote="origin")
    b.update("perf", appender("- base"), "statefile: base")

    def fn(doc: StateDocument | None) -> StateDocument:
        b.update("perf", appender("- b"), "statefile: b")  # b wins every race
        return appender("- a")(doc)

    with pytest.raises(ConflictError, match=r"gave up after 2 tries: origin/memory/autoloop kept changing"):
        a.update("perf", fn, "statefile: a")
    assert rev(remote, LOCAL) == b.tip()
    assert "- a" not in git(remote, "show", f"{BRANCH}:perf.md")


def hook(bare: Path, name: str, body: str) -> None:
    path = bare / "hooks" / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def vanish_after_receiving(bare: Path, seconds: float | None) -> None:
    """A post-receive hook that takes the remote away (moves it aside), then kills receive-pack: the ref has
    moved, git push exits non-zero without a verdict, and fetching from the remote fails — for ``seconds``, or
    until the test puts it back (``None``)."""
    back = "" if seconds is None else f'(sleep {seconds}; mv "$D.away" "$D") </dev/null >/dev/null 2>&1 &'
    # The sleeper's descriptors go to /dev/null: holding git's stderr open would make the push wait for it.
    hook(bare, "post-receive", f'D=$(cd "$GIT_DIR" && pwd -P)\ncd /\nmv "$D" "$D.away"\n{back}\nkill -9 $PPID')


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never came back"
        time.sleep(0.05)


# -- a push whose outcome cannot be read straight away --------------------------------------------------------------


@pytest.mark.slow  # fault injection: waits out a remote that stalls, a stale lock or a timeout
def test_a_push_that_landed_is_verified_once_the_remote_answers_again(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    assert run_statefile("--remote", "origin", "init", "perf", cwd=work).returncode == 0
    vanish_after_receiving(remote, 2)
    proc = run_statefile("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "7", cwd=work)
    wait_for(remote)
    assert proc.returncode == 0, proc.stderr
    assert git(remote, "show", f"{BRANCH}:perf.md").count("### Iteration 1 ") == 1
    assert rev(work, LOCAL) == rev(remote, LOCAL) == rev(work, TRACKING)


@pytest.mark.slow  # fault injection: waits out a remote that stalls, a stale lock or a timeout
def test_a_push_that_cannot_be_verified_says_so_and_never_that_it_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    store.update("perf", appender("- one"), "statefile: one")
    before = rev(work, LOCAL)
    # The check is bounded by time: a shorter bound keeps this test short (the remote stays away throughout).
    monkeypatch.setattr(git_store, "_VERIFY_BACKOFF", Backoff(tries=20, first=0.05, cap=0.2, budget=1.0))
    vanish_after_receiving(remote, None)
    with pytest.raises(GitError) as info:
        store.update("perf", appender("- two"), "statefile: two")
    message = str(info.value)
    assert info.value.exit_code == EXIT_GIT and "\n" not in message
    assert "may have landed" in message and "could not be verified" in message
    assert "`statefile --remote origin log perf`" in message and "before recording again" in message
    assert "failed" not in message.replace(str(tmp_path), "").lower()
    (tmp_path / "remote.git.away").rename(remote)
    assert "- two" in git(remote, "show", f"{BRANCH}:perf.md")  # it had landed: hence "may have"
    assert rev(work, LOCAL) == before  # nothing here claims it did


@pytest.mark.slow  # fault injection: waits out a remote that stalls, a stale lock or a timeout
def test_a_stale_lock_on_the_remote_is_given_up_on_without_the_whole_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default tries and budget (100 tries, 300 s), a lock that stays held while the remote's tip stays
    put is taken for a stale one after STALE_REMOTE_LOCK seconds, not retried for five minutes.  (Here the grace
    is 0 s, so the second locked push already gives up; the old loop pushed until its tries ran out.)"""
    remote = make_remote(tmp_path)
    work = clone(remote, tmp_path / "work")
    store = Store.open(work, remote="origin")
    store.update("perf", appender("- one"), "statefile: one")
    before = rev(remote, LOCAL)
    (remote / "refs" / "heads" / "memory" / "autoloop.lock").write_text("")
    monkeypatch.setattr(git_store, "STALE_REMOTE_LOCK", 0.0)
    pushes: list[str] = []
    push = Remote.push

    def counted(self: Remote, new: str) -> tuple[Outcome, Result]:
        pushes.append(new)
        return push(self, new)

    monkeypatch.setattr(Remote, "push", counted)
    with pytest.raises(GitError, match="stale"):
        store.update("perf", appender("- two"), "statefile: two")
    assert len(pushes) == 2
    assert rev(remote, LOCAL) == before


def test_git_processes_per_command(tmp_path: Path) -> None:
    """A ``git`` first on PATH logs each process statefile starts, in a clone in step with the remote (a runner
    recording every iteration).  They were 9 (local record: for-each-ref twice), 21 (``--remote`` record: two
    fetches, three for-each-ref, two merge-base, an ls-remote) and 9 (``--remote`` render), then 7 / 9 / 4 (blobs,
    trees and commit by hash-object, mktree, commit-tree).  Local: rev-parse, for-each-ref, cat-file, fast-import
    (blobs and trees), commit-tree, update-ref; ``--remote`` adds ls-remote (which also refuses a symbolic ref there)
    and push, and the local refs follow in one update-ref; no fetch while the remote's tip is already here."""
    work = clone(make_remote(tmp_path), tmp_path / "work")
    log, bin_dir = tmp_path / "git.log", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec {shutil.which("git")} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def processes(*args: str) -> list[str]:
        log.write_text("")
        proc = run_statefile(*args, cwd=work, env=env)
        assert proc.returncode == 0, proc.stderr
        return log.read_text().splitlines()

    record = ("record", "perf", "--status", "accepted", "--metric", "1")
    processes("--remote", "origin", "init", "perf")
    assert git(work, "rev-parse", BRANCH) == git(work, "rev-parse", f"origin/{BRANCH}")
    remote_record = processes("--remote", "origin", *record)
    assert len(remote_record) == 8, remote_record
    remote_render = processes("--remote", "origin", "render", "perf")
    assert len(remote_render) == 4, remote_render
    local_record = processes(*record)
    assert len(local_record) == 6, local_record


# A writer that never stops (until killed): alternates plain updates and compactions with archive text.
LOOPER = """
import sys
from statefile.model.document import StateDocument, parse
from statefile.store import Store, Change

store = Store.open(sys.argv[1], remote=None if sys.argv[2] == "-" else sys.argv[2], max_bytes=4000)
i = 0
while True:
    i += 1
    def fn(doc, i=i):
        text = doc.render() if doc is not None else "# Autoloop: perf\\n\\n"
        lines = text.splitlines(keepends=True)
        if len(lines) > 40:  # fold the oldest half into the archive, in the same commit
            head, old, rest = lines[:2], lines[2:22], lines[22:]
            kept = parse("".join(head + rest) + f"- line {i}\\n")
            return Change(kept, archive="".join(old), archive_label=f"fold {i}")
        return parse(text + f"- line {i}\\n")
    store.update("perf", fn, f"statefile: step {i}")
"""


def _assert_sound(repo: Path) -> None:
    """The branch points at a complete commit and its state file parses; archives are whole chunks."""
    fsck_clean(repo)
    store = Store.open(repo)
    try:
        text = store.read_text("perf")
        if text is None:
            return
        doc = parse(text)
        assert doc.render() == text and text.startswith("# Autoloop: perf\n\n")
        assert all(line.startswith("- line ") for line in text.splitlines()[2:])
        for part in store.archive_parts("perf"):
            assert store.read_archive("perf", part).startswith("# Archive: perf")
    finally:
        store.close()


def recovered(round_: int) -> Callable[[StateDocument | None], StateDocument]:
    def fn(doc: StateDocument | None) -> StateDocument:
        return parse((doc.render() if doc else "# Autoloop: perf\n\n") + f"- line recovered {round_}\n")

    return fn


@pytest.mark.slow
def test_processes_sharing_one_repository_serialize_through_the_ref(tmp_path: Path) -> None:
    """Real processes writing one branch at once, nothing mocked: processes sharing one repository serialize through the
    ref."""
    repo = make_repo(tmp_path / "repo")
    procs = [spawn(WORKER, str(repo), "-", f"p{n}", "15", "200") for n in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    text = Store.open(repo).read_text("perf") or ""
    assert sorted(lines_of(text)) == sorted(f"- p{n}-{i}" for n in range(4) for i in range(15))
    assert commit_count(repo, LOCAL) == 60
    fsck_clean(repo)


@pytest.mark.slow
@pytest.mark.parametrize("with_remote", [False, True], ids=["local", "remote"])
def test_a_writer_killed_at_random_moments_never_breaks_the_branch(tmp_path: Path, with_remote: bool) -> None:
    """Real processes writing one branch at once, nothing mocked: a writer killed at random moments never breaks the
    branch."""
    remote = make_remote(tmp_path)
    repo = clone(remote, tmp_path / "work")
    rng = random.Random(1234)
    for round_ in range(8):
        proc = spawn(LOOPER, str(repo), "origin" if with_remote else "-")
        time.sleep(rng.uniform(0.4, 1.2))
        os.killpg(proc.pid, signal.SIGKILL)  # the writer and every git it runs, as when a CI job is cancelled
        proc.communicate()
        # A git killed while holding a ref lock leaves the .lock file (plain git does too): that blocks writers,
        # which then say so, but it is not damage.  Clear them as an operator would.
        for git_dir in (repo / ".git", remote):
            for lock in [*(git_dir / "refs").rglob("*.lock"), *git_dir.glob("packed-refs.lock")]:
                lock.unlink()
        _assert_sound(repo)
        if with_remote:
            fsck_clean(remote)
        # The branch is usable straight away: the next writer picks up wherever the killed one stopped.
        store = Store.open(repo, remote="origin" if with_remote else None)
        store.update("perf", recovered(round_), "statefile: after a kill")
        store.close()
        _assert_sound(repo)
    assert rev(repo, LOCAL) is not None
    if with_remote:
        assert commit_count(remote, LOCAL) > 10
        assert rev(remote, LOCAL) == rev(repo, LOCAL)
    else:
        assert commit_count(repo, LOCAL) > 20


@pytest.mark.slow
def test_eight_processes_in_eight_clones_all_forty_updates_land(tmp_path: Path) -> None:
    # The store's default limits, no more: every writer keeps trying (with backoff) until its updates land.
    """Real processes writing one branch at once, nothing mocked: eight processes in eight clones all forty updates
    land."""
    remote = make_remote(tmp_path)
    clones = [clone(remote, tmp_path / f"runner{n}") for n in range(8)]
    procs = [spawn(WORKER, str(path), "origin", f"w{n}", "5", "0") for n, path in enumerate(clones)]
    retries = 0
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()
        retries += int(out.decode().strip())
    text = git(remote, "show", f"{BRANCH}:perf.md")
    expected = {f"- w{n}-{i}" for n in range(8) for i in range(5)}
    assert sorted(lines_of(text)) == sorted(expected)  # each once: none lost, none applied twice
    for n in range(8):  # every writer's own updates are in its order
        mine = [line for line in lines_of(text) if line.startswith(f"- w{n}-")]
        assert mine == [f"- w{n}-{i}" for i in range(5)]
    assert commit_count(remote, LOCAL) == 40
    assert retries > 0  # the writers really did race
    assert git(remote, "rev-list", "--merges", "--count", LOCAL).strip() == "0"  # linear history
    fsck_clean(remote)
