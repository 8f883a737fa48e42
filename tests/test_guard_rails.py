"""Guard rails (issue 13): every ordinary mistake is refused with one line and a documented exit code, and leaves
the memory exactly as it was — compared ref by ref, here and on the bare remote, before and after.

One prepared repository per module (a bare remote and a clone with three programs on memory/autoloop); each test
works on a copy of it.  Most commands run in-process through :func:`statefile.cli.run.invoke`, which is what the
console script runs; ``TestConsoleScript`` runs a few representative mistakes through the real console script.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from gitutil import git, make_repos, run_statefile
from upstream import upstream_machine_state

from statefile.cli import cli
from statefile.cli.run import invoke
from statefile.model.synthetic import synthetic_state
from statefile.store import Store

BRANCH = "memory/autoloop"


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def error_line(self) -> str:
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        assert "Traceback" not in self.err
        return lines[0]


@dataclass
class Repo:
    root: Path
    work: Path
    remote: Path

    def refs(self) -> dict[str, str]:
        """Every ref here and on the remote (the memory, and anything a mistake could have created)."""
        here = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=self.work)
        there = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=self.remote)
        refs = {f"work:{line.split()[0]}": line.split()[1] for line in here.splitlines()}
        refs.update({f"remote:{line.split()[0]}": line.split()[1] for line in there.splitlines()})
        return refs

    def remote_file(self, path: str, branch: str = BRANCH) -> str:
        return git("show", f"{branch}:{path}", cwd=self.remote)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare remote and a work clone; memory/autoloop (on the remote only) holds perf, latency and pipeline."""
    root = tmp_path_factory.mktemp("guard")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x.invalid"}  # fmt: skip
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        repos = make_repos(root)
        git("remote", "set-url", "origin", "../remote.git", cwd=repos.work)  # copies of root keep working
        files = {
            "perf.md": synthetic_state("perf", 12, seed=1, lessons=4),
            "latency.md": synthetic_state("latency", 3, seed=2),
            "pipeline.md": synthetic_state("pipeline", 2, seed=3),
        }
        with Store.open(repos.work, remote="origin") as store:
            store.write_files(files, "seed")
        git("branch", "-D", BRANCH, cwd=repos.work)  # a CI clone: the memory branch only as origin/memory/autoloop
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return root


@pytest.fixture
def repo(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Repo]:
    root = tmp_path / "copy"
    shutil.copytree(template, root, symlinks=True)
    work = root / "work"
    monkeypatch.chdir(work)
    for key in ("STATEFILE_REMOTE", "STATEFILE_BRANCH", "STATEFILE_DIR", "STATEFILE_JSON", "NO_COLOR",
                "STATEFILE_AUTOLOOP_JSON"):  # fmt: skip
        monkeypatch.delenv(key, raising=False)
    yield Repo(root, work, root / "remote.git")


def sf(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """Run a command in-process, exactly as the console script does (statefile.cli.main → invoke)."""
    capsys.readouterr()
    code = invoke(cli, list(args))
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def unchanged(repo: Repo, before: dict[str, str]) -> None:
    assert repo.refs() == before


# -- 1. writes never invent memory ------------------------------------------------------------------------------


def test_a_mistyped_program_is_not_found_with_the_closest_names(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    before = repo.refs()
    result = sf(capsys, "--remote", "origin", "record", "perff", "--status", "accepted")
    assert result.code == 3
    assert "no program 'perff' (did you mean 'perf'?)" in result.error_line
    assert "--create" in result.error_line
    unchanged(repo, before)


def test_create_starts_a_program_and_the_scheduler_selected_one_needs_no_flag(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = sf(capsys, "--remote", "origin", "record", "fresh", "--status", "accepted", "--create")
    assert created.code == 0, created.err
    assert "created fresh.md (--create)" in created.out
    # The scheduler's selection (record --autoloop-json, or STATEFILE_AUTOLOOP_JSON) may be created without it.
    selection = tmp_path / "autoloop.json"
    selection.write_text(json.dumps({"selected": "chosen", "selected_metric_direction": "lower"}))
    monkeypatch.setenv("STATEFILE_AUTOLOOP_JSON", str(selection))
    chosen = sf(capsys, "--remote", "origin", "--json", "record", "chosen", "--status", "rejected")
    assert chosen.code == 0, chosen.err
    assert json.loads(chosen.out)["created"] is True
    other = sf(capsys, "--remote", "origin", "record", "not-chosen", "--status", "rejected")
    assert other.code == 3
    assert "chosen.md" in git("ls-tree", "--name-only", BRANCH, cwd=repo.remote)


def test_the_schedulers_first_run_starts_the_branch_but_a_mistyped_branch_never(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "first").mkdir()
    repos = make_repos(tmp_path / "first")
    monkeypatch.chdir(repos.work)
    monkeypatch.delenv("STATEFILE_BRANCH", raising=False)
    selection = tmp_path / "autoloop.json"
    selection.write_text(json.dumps({"selected": "perf"}))
    args = ["--remote", "origin", "record", "perf", "--status", "rejected", "--autoloop-json", str(selection)]
    typo = sf(capsys, "--branch", "memory/autolop", *args)
    assert typo.code == 3 and "no memory branch memory/autolop" in typo.error_line
    first = sf(capsys, *args)
    assert first.code == 0, first.err
    assert "selected in" in first.out
    assert git("ls-remote", "--heads", "origin", cwd=repos.work).count("refs/heads/memory/") == 1


def test_without_remote_a_ci_clone_is_told_to_pass_it_not_forked(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    before = repo.refs()
    result = sf(capsys, "record", "perf", "--status", "accepted", "--metric", "1")
    assert result.code == 3
    line = result.error_line
    assert "no local branch memory/autoloop, only origin/memory/autoloop" in line
    assert "pass --remote origin" in line and "nothing was written" in line
    unchanged(repo, before)  # no orphan local branch
    # Reading is fine: it fetches the branch first (issue 22), or, with --no-fetch, says in its output what it read.
    listed = sf(capsys, "list")
    assert listed.code == 0 and "perf" in listed.out and "as last fetched" not in listed.out + listed.err
    offline = sf(capsys, "--no-fetch", "list")
    assert offline.code == 0 and "perf" in offline.out
    assert "read origin/memory/autoloop as last fetched" in offline.out + offline.err


def test_a_mistyped_branch_is_never_created(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    before = repo.refs()
    for args in (
        ["--branch", "memory/autolop", "record", "perf", "--status", "accepted"],
        ["--remote", "origin", "--branch", "memory/autolop", "record", "perf", "--status", "accepted"],
        ["--remote", "origin", "--branch", "memory/autolop", "lesson", "add", "perf", "x"],
    ):
        result = sf(capsys, *args)
        assert result.code == 3, result
        assert "no memory branch memory/autolop" in result.error_line
        assert "did you mean memory/autoloop?" in result.error_line
    unchanged(repo, before)
    listed = sf(capsys, "--branch", "nope", "list")
    assert listed.code == 3 and "no memory branch nope" in listed.error_line


def test_a_mistyped_branch_is_not_offered_for_creation_nor_created_by_create(
    repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As seen: `--branch memory/autolop record …` said "did you mean memory/autoloop? … pass --create", and
    following that advice started a second memory on the typo'd branch."""
    monkeypatch.delenv("STATEFILE_NEW_BRANCH", raising=False)
    before = repo.refs()
    typo = ["--remote", "origin", "--branch", "memory/autolop"]
    offered = sf(capsys, *typo, "record", "perf", "--status", "accepted")
    assert offered.code == 3 and "did you mean memory/autoloop?" in offered.error_line
    assert "--create" not in offered.error_line and "pass --branch memory/autoloop" in offered.error_line
    for args in (
        [*typo, "record", "perf", "--status", "accepted", "--create"],
        ["--branch", "memory/autolop", "record", "perf", "--status", "accepted", "--create"],
        [*typo, "init", "perf"],
        ["--remote", "origin", "--branch", "Memory/Autoloop", "init", "perf"],
    ):
        refused = sf(capsys, *args)
        assert refused.code == 3, (args, refused)
        assert "did you mean memory/autoloop?" in refused.error_line and "nothing was written" in refused.error_line
        assert "STATEFILE_NEW_BRANCH=" in refused.error_line
    unchanged(repo, before)
    # A name that is no near miss is created as asked; one that is, only when acknowledged by its full name.
    assert sf(capsys, "--remote", "origin", "--branch", "memory/experiments", "init", "perf").code == 0
    monkeypatch.setenv("STATEFILE_NEW_BRANCH", "memory/autolop")
    assert sf(capsys, *typo, "record", "perf", "--status", "accepted", "--create").code == 0
    assert repo.remote_file("perf.md", "memory/autolop")


def test_a_stale_local_branch_is_reported_on_read_and_refused_on_write(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(3):
        assert sf(capsys, "--remote", "origin", "record", "perf", "--status", "rejected").code == 0, n
    git("branch", "-f", BRANCH, f"origin/{BRANCH}~3", cwd=repo.work)  # the local branch, three commits behind
    listed = sf(capsys, "--json", "--no-fetch", "list")
    assert listed.code == 0
    assert next(r for r in json.loads(listed.out) if r["program"] == "perf")["iteration_count"] == 12
    assert "origin/memory/autoloop has 3 newer commits — pass --remote origin" in listed.err
    # By default a read fetches and shows the remote's memory, and moves no branch.
    local = git("rev-parse", BRANCH, cwd=repo.work)
    fetched = sf(capsys, "--json", "list")
    assert next(r for r in json.loads(fetched.out) if r["program"] == "perf")["iteration_count"] == 15
    assert git("rev-parse", BRANCH, cwd=repo.work) == local
    before = repo.refs()
    result = sf(capsys, "record", "perf", "--status", "accepted")
    assert result.code == 5
    assert "3 commits behind origin/memory/autoloop" in result.error_line
    unchanged(repo, before)
    fresh = sf(capsys, "--remote", "origin", "--json", "list")
    assert next(r for r in json.loads(fresh.out) if r["program"] == "perf")["iteration_count"] == 15
    assert fresh.err == ""  # the remote's current tip: nothing to say


def test_a_remote_without_the_branch_is_said_and_not_written_to(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    git("branch", BRANCH, f"origin/{BRANCH}", cwd=repo.work)
    git("init", "--quiet", "--bare", str(repo.root / "empty.git"), cwd=repo.root)
    git("remote", "add", "empty", "../empty.git", cwd=repo.work)
    listed = sf(capsys, "--remote", "empty", "list")
    assert listed.code == 0 and "perf" in listed.out
    assert "empty has no branch memory/autoloop: read the local one" in listed.err
    before = repo.refs()
    result = sf(capsys, "--remote", "empty", "record", "perf", "--status", "accepted")
    assert result.code == 3
    assert "empty has no branch memory/autoloop" in result.error_line and "sync" in result.error_line
    unchanged(repo, before)


def test_a_diverged_local_branch_is_refused_then_synced_losing_nothing(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    git("branch", BRANCH, f"origin/{BRANCH}", cwd=repo.work)
    local = sf(capsys, "record", "perf", "--status", "rejected", "--change", "local-only attempt", "--lesson",
               "Learned offline")  # fmt: skip
    assert local.code == 0, local.err  # a local-only write (no --remote): the branch is ahead of origin
    other = repo.root / "other"  # meanwhile a scheduled run records through origin

    git("clone", "--quiet", str(repo.remote), str(other), cwd=repo.root)
    assert run_statefile("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "999",
                         cwd=other).returncode == 0  # fmt: skip
    git("fetch", "--quiet", "origin", cwd=repo.work)
    before = repo.refs()
    refused = sf(capsys, "--remote", "origin", "record", "perf", "--status", "accepted")
    assert refused.code == 5
    assert "have diverged" in refused.error_line and "statefile --remote origin sync" in refused.error_line
    unchanged(repo, before)
    synced = sf(capsys, "--remote", "origin", "sync")
    assert synced.code == 0, synced.err
    assert "recorded local iteration" in synced.out and "refs/statefile/kept/" in synced.out
    text = repo.remote_file("perf.md")
    assert "local-only attempt" in text and "Learned offline" in text  # the local record, re-recorded
    state = upstream_machine_state(text)
    assert state["best_metric"] == "999"  # the remote's accepted iteration stands
    again = sf(capsys, "--remote", "origin", "sync")
    assert again.code == 0 and again.out.startswith("nothing changed")


# -- 2. status words -------------------------------------------------------------------------------------------


def test_a_mistyped_status_is_a_usage_error_with_did_you_mean(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    before = repo.refs()
    result = sf(capsys, "--remote", "origin", "record", "perf", "--status", "acepted", "--metric", "5")
    assert result.code == 2
    assert "did you mean 'accepted'?" in result.error_line and "--new-status" in result.error_line
    unchanged(repo, before)
    forced = sf(capsys, "--remote", "origin", "record", "perf", "--status", "pending-ci", "--new-status")
    assert forced.code == 0 and "pending-ci" in forced.out


# -- 3. options where users type them --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["show", "perf", "--json", "--remote", "origin"],
        ["status", "perf", "--json", "--remote", "origin"],
        ["list", "--json", "--remote", "origin"],
        ["config", "--json"],
    ],
)
def test_global_options_work_after_the_command(repo: Repo, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    result = sf(capsys, *args)
    assert result.code == 0, result.err
    json.loads(result.out)


# -- 4. headings restored, record says what it changed ---------------------------------------------------------

DRIFTED = "## Machine State\n"


def _drift(capsys: pytest.CaptureFixture[str], program: str) -> None:
    with Store.open(".", remote="origin") as store:
        text = store.read_text(program) or ""
        store.write_files({f"{program}.md": text.replace("## ⚙️ Machine State\n", DRIFTED, 1)}, "drift")


@pytest.mark.parametrize(
    "args",
    [
        ["compact", "perf"],
        ["lesson", "add", "perf", "A brand new lesson"],
        ["lesson", "pin", "perf", "1"],
        ["record", "perf", "--status", "rejected"],
    ],
)
def test_every_write_restores_a_drifted_machine_state_heading(
    repo: Repo, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    _drift(capsys, "perf")
    assert upstream_machine_state(repo.remote_file("perf.md")) == {}  # the scheduler sees a brand-new program
    result = sf(capsys, "--remote", "origin", *args)
    assert result.code == 0, result.err
    text = repo.remote_file("perf.md")
    assert "## ⚙️ Machine State\n" in text and DRIFTED not in text
    assert upstream_machine_state(text)["iteration_count"] >= 12


def test_edit_restores_a_heading_the_edit_drifted(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "t = p.read_text(encoding='utf-8')\n"
        "p.write_text(t.replace('## ⚙️ Machine State', '## Machine State').replace('Goal', 'The goal'), "
        "encoding='utf-8')\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    result = sf(capsys, "--remote", "origin", "edit", "pipeline")
    assert result.code == 0, result.err
    assert "restored the ⚙️ Machine State heading" in result.out
    text = repo.remote_file("pipeline.md")
    assert "The goal" in text and "## ⚙️ Machine State\n" in text


def test_record_reports_pause_unpause_best_and_completion(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--remote", "origin"]
    for _ in range(3):
        result = sf(capsys, *base, "record", "latency", "--status", "error")
    assert "paused: 3 consecutive errors" in result.out
    again = sf(capsys, *base, "record", "latency", "--status", "rejected")
    assert "note: the program is paused" in again.out
    accepted = sf(capsys, *base, "--json", "record", "latency", "--status", "accepted", "--metric", "1e9")
    data = json.loads(accepted.out)
    assert data["unpaused"] is True and data["previous_pause_reason"].startswith("3 consecutive errors")
    assert data["best_metric"]["new_best"] is True and data["paused"] is False
    log = git("log", "-1", "--format=%B", BRANCH, cwd=repo.remote)
    assert "unpaused: an accepted iteration un-pauses the program" in log  # the cleared reason is kept in git
    with Store.open(".", remote="origin") as store:
        text = store.read_text("latency") or ""
        store.write_files({"latency.md": text.replace("| Target Metric | — |", "| Target Metric | 5 |")}, "t")
    done = sf(capsys, *base, "record", "latency", "--status", "accepted", "--metric", "2e9")
    assert "completed: target metric 5 reached" in done.out
    after = sf(capsys, *base, "record", "latency", "--status", "rejected")
    assert "note: the program was already completed" in after.out


# -- 4. import restores any export, whatever its size ---------------------------------------------------------


def test_an_over_budget_export_imports_byte_for_byte(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    big = synthetic_state("huge", 120, seed=9)
    assert len(big.encode()) > 30720
    with Store.open(".", remote="origin", max_bytes=10_000_000) as store:
        store.write_files({"huge.md": big}, "an agent wrote it this big")
    export = tmp_path / "memory.json"
    assert sf(capsys, "--remote", "origin", "export", "--out", str(export)).code == 0
    imported = sf(capsys, "--remote", "origin", "--branch", "memory/restored", "import", str(export))
    assert imported.code == 0, imported.err
    assert "huge.md is over the budget" in imported.out and "statefile compact huge" in imported.out
    assert repo.remote_file("huge.md", "memory/restored") == big
    for name in ("perf", "latency", "pipeline"):
        assert repo.remote_file(f"{name}.md", "memory/restored") == repo.remote_file(f"{name}.md")
    before = repo.refs()
    repeated = sf(capsys, "--remote", "origin", "--branch", "memory/restored", "import", str(export))
    assert repeated.code == 0 and repeated.out.startswith("nothing changed")
    unchanged(repo, before)
    same = sf(capsys, "--remote", "origin", "import", str(export))  # into the branch it came from
    assert same.code == 0 and same.out.startswith("nothing changed")
    unchanged(repo, before)


def test_import_restores_a_drifted_heading_after_the_exact_copy(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _drift(capsys, "pipeline")
    export = tmp_path / "memory.json"
    assert sf(capsys, "--remote", "origin", "export", "--out", str(export)).code == 0
    result = sf(capsys, "--remote", "origin", "--branch", "memory/restored", "import", str(export))
    assert result.code == 0, result.err
    assert "restored the ⚙️ Machine State heading of pipeline.md" in result.out
    exact = git("show", "memory/restored~1:pipeline.md", cwd=repo.remote)
    assert exact == repo.remote_file("pipeline.md")  # the import commit itself is the backup, byte for byte
    assert "## ⚙️ Machine State\n" in repo.remote_file("pipeline.md", "memory/restored")


# -- 7. output for people, and no-ops that say so ------------------------------------------------------------


def test_no_op_commands_say_nothing_changed(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--remote", "origin"]
    assert sf(capsys, *base, "lesson", "add", "perf", "Warm the cache first").code == 0
    before = repo.refs()
    for args, says in (
        (["lesson", "add", "perf", "Warm the cache first"], "perf already has this lesson"),
        (["lesson", "unpin", "perf", "Warm the cache"], "the lesson is not pinned"),
    ):
        result = sf(capsys, *base, *args)
        assert result.code == 0 and result.out.strip() == f"nothing changed: {says}", result.out
    unchanged(repo, before)
    assert sf(capsys, *base, "lesson", "promote", "perf", "Warm the cache").code == 0
    before = repo.refs()
    promoted = sf(capsys, *base, "lesson", "promote", "perf", "Warm the cache")
    assert promoted.out.strip() == "nothing changed: _shared.md already has this lesson"
    unchanged(repo, before)
    compacted = sf(capsys, *base, "compact", "pipeline")
    assert compacted.out.startswith("pipeline: nothing changed")


def test_list_columns_line_up_and_values_read_as_words(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    assert sf(capsys, "--remote", "origin", "init", "a").code == 0  # a short name, never run
    lines = sf(capsys, "--remote", "origin", "list").out.splitlines()
    header = lines[0]
    assert header.split() == ["PROGRAM", "BYTES", "BUDGET", "ITERS", "LAST", "RUN", "STATUS"]
    rows = [line for line in lines[1:] if not line.startswith("total:")]  # H14's totals line is prose
    assert len(rows) == 4
    for line in rows:
        for name in ("BYTES", "BUDGET", "ITERS"):  # numbers end where their header ends
            end = header.index(name) + len(name)
            assert line[end - 1] != " " and line[end : end + 1] in (" ", ""), (name, line)
        for name in ("LAST RUN", "STATUS"):  # text starts where its header starts
            start = header.index(name)
            assert line[start - 1] == " " and line[start] != " ", (name, line)
    row = next(line for line in lines if line.startswith("a "))
    assert row.split()[3:] == ["0", "—", "new"]
    shown = sf(capsys, "--remote", "origin", "show", "a").out
    assert "None" not in shown and "False" not in shown and "['" not in shown
    assert "Paused              no" in shown and "history: 0 iterations, 0 ranges" in shown


def test_sizes_like_30kb_work_on_the_command_line(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (
        ["--max-bytes", "30KB", "check"],
        ["check", "--max-bytes", "30KB"],
        ["compact", "perf", "--max-bytes", "20KB", "--dry-run"],
    ):
        result = sf(capsys, "--remote", "origin", *args)
        assert result.code == 0, (args, result.err)
    bad = sf(capsys, "--max-bytes", "thirty", "check")
    assert bad.code == 2 and "30KB" in bad.err


def test_report_out_to_a_mistyped_path_creates_nothing(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wrong = tmp_path / "gh-aw" / "autolop.json"
    result = sf(capsys, "--remote", "origin", "report", "--out", str(wrong))
    assert result.code == 3 and "no such file" in result.error_line
    assert not wrong.exists() and not wrong.parent.exists()


def test_dir_with_branch_is_refused(repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    result = sf(capsys, "--dir", str(folder), "--branch", "memory/x", "list")
    assert result.code == 2 and "--dir" in result.error_line and "--branch" in result.error_line


# -- through the real console script -----------------------------------------------------------------------------


class TestConsoleScript:
    """A few representative mistakes through the installed ``statefile`` executable (not in-process)."""

    def test_mistyped_program_status_and_branch(self, repo: Repo) -> None:
        before = repo.refs()
        cases = [
            (["--remote", "origin", "record", "perff", "--status", "accepted"], 3, "did you mean 'perf'?"),
            (["--remote", "origin", "record", "perf", "--status", "acepted"], 2, "did you mean 'accepted'?"),
            (["--branch", "memory/typo", "record", "perf", "--status", "accepted"], 3, "no memory branch memory/typo"),
            (["record", "perf", "--status", "accepted"], 3, "pass --remote origin"),
        ]
        for args, code, needle in cases:
            proc = run_statefile(*args, cwd=repo.work)
            assert proc.returncode == code, (args, proc.stderr)
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr
        unchanged(repo, before)

    def test_notes_go_to_stderr_and_colour_never_reaches_a_pipe(self, repo: Repo) -> None:
        proc = run_statefile("--json", "--no-fetch", "list", cwd=repo.work)
        assert proc.returncode == 0
        json.loads(proc.stdout)  # stdout stays data
        assert "as last fetched" in proc.stderr
        assert "\x1b[" not in proc.stdout + proc.stderr
        quiet = run_statefile("-q", "list", cwd=repo.work)
        assert quiet.stderr == ""
