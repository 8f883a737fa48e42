"""GitStore on real repositories in tmp dirs, with a bare repository as the remote (its write transaction:
test_transaction.py)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from gitutil import git as repo_git
from gitutil import make_repos, run_statefile
from storeutil import (
    BRANCH,
    LOCAL,
    TRACKING,
    appender,
    blob,
    clone,
    commit_count,
    files_at,
    fsck_clean,
    git,
    make_remote,
    make_repo,
    one_error_line,
    rev,
)
from synthetic import synthetic_state

from statefile.errors import (
    EXIT_CHECK_FAILED,
    EXIT_INVALID_DATA,
    BudgetError,
    ConflictError,
    NotFoundError,
    UsageError,
)
from statefile.model.document import StateDocument, parse
from statefile.store import BOT_EMAIL, BOT_NAME, Change, GitStore, Store

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
