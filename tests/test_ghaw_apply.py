"""``statefile apply``: the custom safe-output job's one command, against a real bare remote."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from gitutil import run_statefile
from upstream import upstream_machine_state

from statefile.cli import cli
from statefile.cli.run import invoke

BRANCH = "memory/autoloop"


class Job:
    """A safe-output job's folder: the downloaded agent artifact, a remote, and no checkout."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.remote = root / "server" / "owner" / "repo.git"
        self.remote.parent.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "--bare", str(self.remote)], check=True)
        self.dir = root / "safe-jobs"
        self.dir.mkdir()
        self.workspace = root / "empty"
        self.workspace.mkdir()
        monkeypatch.chdir(self.workspace)
        self.env = {"GITHUB_SERVER_URL": (root / "server").as_uri(), "GITHUB_REPOSITORY": "owner/repo",
                    "GITHUB_RUN_ID": "500"}  # fmt: skip
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GH_AW_SAFE_OUTPUTS_STAGED", raising=False)
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)

    @property
    def url(self) -> str:
        return self.remote.as_uri()

    def output(self, *items: dict[str, Any], errors: list[str] | None = None) -> Path:
        path = self.dir / "agent_output.json"
        path.write_text(json.dumps({"items": [{"type": "record_iteration", **i} for i in items],
                                    "errors": errors or []}))  # fmt: skip
        return path

    def context(self, **fields: Any) -> None:
        folder = self.dir / "agent" / "statefile"
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "statefile_context": 1,
            "selected": "perf",
            "metric_direction": "lower",
            "target_metric": "10",
            "goal": "Make it fast",
            "programs": ["perf", "docs"],
            "run_id": "500",
            "run_attempt": "1",
            **fields,
        }
        (folder / "context.json").write_text(json.dumps(data))

    def apply(self, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
        code = invoke(cli, ["--remote", self.url, "apply", "--agent-output", str(self.dir / "agent_output.json"),
                            *extra])  # fmt: skip
        out, err = capsys.readouterr()
        return code, out, err

    def file(self, path: str) -> str | None:
        done = subprocess.run(["git", "show", f"{BRANCH}:{path}"], cwd=self.remote, capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    def commits(self) -> int:
        done = subprocess.run(["git", "rev-list", "--count", BRANCH], cwd=self.remote, capture_output=True, text=True)
        return int(done.stdout or 0) if done.returncode == 0 else 0


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Job:
    return Job(tmp_path, monkeypatch)


GOOD = {"program": "perf", "status": "accepted", "metric": "12.5", "change": "Cache rows", "notes": "faster",
        "commit": "a1b2c3d", "pr": "#7", "lessons": "Warm the cache\nMeasure twice"}  # fmt: skip


def test_items_land_in_order_and_bad_ones_are_reported(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    job.context()
    job.output(
        GOOD,
        {"program": "perff", "status": "rejected"},
        {"program": "perf", "status": "great!"},
        {"program": "perf", "status": "rejected", "metric": "13"},
        {"program": "docs", "status": "error"},
    )
    code, out, err = job.apply(capsys)
    assert code == 3  # the worst failure: an unknown program (3) beats an invalid status (2)
    lines = out.splitlines()
    assert lines[0].startswith("item 1 (perf): recorded iteration 1 (accepted)")
    assert lines[1].startswith("item 4 (perf): recorded iteration 2 (rejected)")
    assert lines[2].startswith("item 5 (docs): recorded iteration 1 (error)")
    assert err.count("statefile: error: ") == 2 and "Traceback" not in err
    assert "item 2 (perff): unknown program 'perff' (known: docs, perf)" in err
    assert "item 3 (perf): status 'great!'" in err
    state = upstream_machine_state(job.file("perf.md") or "")
    assert state["iteration_count"] == 2 and state["recent_statuses"] == ["accepted", "rejected"]
    # Direction, target and goal come from the program definition (the run context), not a default.
    assert state["metric_direction"] == "lower" and state["target_metric"] == "10" and state["best_metric"] == "12.5"
    text = job.file("perf.md") or ""
    assert "**Goal**: Make it fast" in text and "- **PR**: #7" in text and "- Measure twice" in text
    assert "perff.md" not in subprocess.run(["git", "ls-tree", "--name-only", BRANCH], cwd=job.remote,
                                            capture_output=True, text=True).stdout  # fmt: skip


def test_a_rerun_of_the_job_skips_what_landed(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    job.context()
    job.output(GOOD)
    assert job.apply(capsys)[0] == 0
    commits = job.commits()
    code, out, _ = job.apply(capsys)
    assert code == 0 and "already on the branch (run 500 attempt 1 item 1); skipped" in out
    assert job.commits() == commits
    assert upstream_machine_state(job.file("perf.md") or "")["iteration_count"] == 1


def test_a_rerun_of_the_whole_workflow_is_a_new_iteration(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    """Same run id, same report, but a new agent attempt: a genuinely new iteration, never mis-skipped."""
    job.context()
    job.output(GOOD)
    assert job.apply(capsys)[0] == 0
    job.context(run_attempt="2")
    code, out, _ = job.apply(capsys)
    assert code == 0 and "recorded iteration 2" in out
    assert upstream_machine_state(job.file("perf.md") or "")["iteration_count"] == 2


def test_without_a_context_the_report_itself_is_the_identity(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    job.output({"program": "perf", "status": "rejected"})
    code, _, err = job.apply(capsys)
    assert code == 3 and "unknown program 'perf'" in err, "no context and no file: a typo must not create memory"
    job.context()
    assert job.apply(capsys)[0] == 0  # created with the context
    (job.dir / "agent" / "statefile" / "context.json").unlink()
    job.output({"program": "perf", "status": "rejected", "notes": "second"})
    code, out, _ = job.apply(capsys)
    assert code == 0 and "recorded iteration 2" in out
    code, out, _ = job.apply(capsys)
    assert code == 0 and re.search(r"already on the branch \(run 500 item 1 sha [0-9a-f]{16}\)", out)


def test_an_entry_archived_by_compaction_still_counts_as_landed(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    job.context()
    job.output(GOOD)
    assert job.apply(capsys)[0] == 0
    first = json.loads((job.dir / "agent_output.json").read_text())
    for attempt in range(2, 14):  # later runs push the first entry out of the newest 10, into the archive
        job.context(run_attempt=str(attempt))
        job.output({"program": "perf", "status": "rejected", "notes": f"try {attempt}"})
        assert job.apply(capsys)[0] == 0
    assert "run 500 attempt 1 item 1" not in (job.file("perf.md") or "")
    assert "run 500 attempt 1 item 1" in (job.file("archive/perf/0001.md") or "")
    job.context(run_attempt="1")
    (job.dir / "agent_output.json").write_text(json.dumps(first))
    code, out, _ = job.apply(capsys)
    assert code == 0 and "skipped" in out


def test_staged_mode_writes_nothing(
    job: Job, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_AW_SAFE_OUTPUTS_STAGED", "true")
    job.context()
    job.output(GOOD)
    code, out, _ = job.apply(capsys)
    assert code == 0 and "item 1 (perf): would record iteration 1 (accepted)" in out
    assert job.file("perf.md") is None


def test_dropped_items_and_annotations(
    job: Job, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    job.context()
    job.output(GOOD, {"program": "nope", "status": "error"},
               errors=["Line 2: Too many items of type 'record_iteration'. Maximum allowed: 1."])  # fmt: skip
    code, out, err = job.apply(capsys)
    assert code == 3
    assert "gh-aw dropped an item before this job: Line 2: Too many items" in err
    assert "::warning title=statefile apply::gh-aw dropped" in out
    assert "::error title=statefile apply::item 2 (nope): unknown program" in out


def test_no_items_and_bad_files(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    (job.dir / "agent_output.json").write_text('{"items": [{"type": "add_comment", "body": "x"}]}')
    code, out, _ = job.apply(capsys)
    assert code == 0 and "no record_iteration items" in out
    (job.dir / "agent_output.json").write_text("{")
    code, _, err = job.apply(capsys)
    assert code == 2 and "is not JSON" in err
    (job.dir / "agent_output.json").unlink()
    code, _, err = job.apply(capsys)
    assert code == 3 and "GH_AW_AGENT_OUTPUT" in err


def test_overlapping_jobs_all_land(job: Job) -> None:
    """Four safe-output jobs of overlapping runs, as real processes at once: compare-and-swap, none lost."""
    procs = []
    for n in range(4):
        folder = job.root / f"job{n}"
        (folder / "agent" / "statefile").mkdir(parents=True)
        (folder / "agent" / "statefile" / "context.json").write_text(json.dumps(
            {"statefile_context": 1, "selected": "perf", "programs": ["perf"], "run_id": str(600 + n),
             "run_attempt": "1"}))  # fmt: skip
        (folder / "agent_output.json").write_text(
            json.dumps(
                {"items": [{"type": "record_iteration", "program": "perf", "status": "rejected", "notes": f"job {n}"}]}
            )
        )
        env = {**job.env, "GITHUB_RUN_ID": str(600 + n), "GH_AW_AGENT_OUTPUT": str(folder / "agent_output.json")}
        cmd = ["--remote", job.url, "apply"]
        procs.append(subprocess.Popen([str(Path(run_statefile.__globals__["STATEFILE"])), *cmd], cwd=job.workspace,
                                      env={**__import__("os").environ, **env}, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))  # fmt: skip
    results = [(p.wait(), p.stdout.read() if p.stdout else "", p.stderr.read() if p.stderr else "") for p in procs]
    assert all(code == 0 for code, _, _ in results), results
    state = upstream_machine_state(job.file("perf.md") or "")
    assert state["iteration_count"] == 4
    text = job.file("perf.md") or ""
    assert all(f"run {600 + n} attempt 1 item 1" in text for n in range(4))


def test_status_words_are_read_as_the_state_file_reads_them(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    """An agent's "✅", "Accepted ✅", "accepted." or "Rejected (metric worse)" is its status, not a refused report;
    a word that is truly no status (or one negated) is still refused."""
    job.context()
    job.output(*({"program": "perf", "status": s} for s in ["✅", "Accepted ✅", "accepted.", "Rejected (metric worse)",
                                                             "CI_fix_exhausted", "not accepted"]))  # fmt: skip
    code, out, err = job.apply(capsys)
    assert code == 2 and "item 6 (perf): status 'not-accepted'" in err, err
    state = upstream_machine_state(job.file("perf.md") or "")
    assert state["recent_statuses"] == ["accepted", "accepted", "accepted", "rejected", "ci-fix-exhausted"], out


def test_an_item_recorded_as_a_bullet_keeps_its_marker_out_of_the_fields(
    job: Job, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A history written as bullets gets a bullet entry; the hidden item marker must not become part of its Notes
    (nor show in the views), and a re-run must still find it."""
    from gitutil import git

    from statefile.model.document import parse
    from statefile.model.template import new_state_file

    seed = tmp_path / "seed"
    git("clone", "-q", str(job.remote), str(seed), cwd=tmp_path)
    git("checkout", "-q", "-b", BRANCH, cwd=seed)
    bullets = "- Iter 2: ❌ CI failed · commit 24bbe85\n- Iter 1: ✅ first try\n"
    (seed / "perf.md").write_text(new_state_file("perf").replace("*(No iterations yet.)*\n", bullets), "utf-8")
    git("add", "perf.md", cwd=seed)
    git("-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "seed", cwd=seed)
    git("push", "-q", "origin", BRANCH, cwd=seed)
    job.context()
    job.output({"program": "perf", "status": "accepted", "metric": "9", "change": "Cache rows", "notes": "faster"})
    assert job.apply(capsys)[0] == 0
    text = job.file("perf.md") or ""
    newest = parse(text).iterations[0]
    assert newest.number == 3 and newest.raw.startswith("- Iter")
    assert newest.notes == "faster" and all("<!--" not in value for value in newest.fields.values()), newest.fields
    shown = run_statefile("--remote", "origin", "render", "perf", cwd=seed)
    assert shown.returncode == 0 and "statefile-item" not in shown.stdout, shown.stdout + shown.stderr
    code, out, _ = job.apply(capsys)
    assert code == 0 and "already on the branch" in out
    assert (job.file("perf.md") or "") == text
