"""``statefile history`` and ``statefile summary`` (statefile.cli.insight) through the console script on a real
repository with a bare remote."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import subprocess
from pathlib import Path

import pytest
from conftest import SAMPLES, pinned_identity
from gitutil import STATEFILE, Repos, invoke_statefile, make_repos, run_statefile
from mermaid_xychart import validate
from synthetic import synthetic_state

from cli import test_read
from statefile.model.template import new_state_file
from statefile.store import Store

#: A program paused by errors, un-paused, then paused by hand (the log and show tests' fixture too).
paused = test_read.paused


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    """mid-life (40 iterations) compacted by the real command, then one more recorded: a real archive."""
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("history"))
        with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
            store.write_files({"mid.md": (SAMPLES / "mid-life.md").read_text()}, "seed")
        env = {"STATEFILE_KEEP_RECENT": "3"}
        assert sf(repos, "compact", "mid", env=env).returncode == 0
        proc = sf(repos, "record", "mid", "--status", "accepted", "--metric", "130", "--change", "Port module m3 to Go",
                  "--at", "2026-01-06T09:30:00Z", env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    return repos


def sf(repos: Repos, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_statefile("--remote", "origin", *args, cwd=repos.work, env=env)


def test_history_json_has_every_iteration_once_and_points_at_its_text(seeded: Repos) -> None:
    proc = sf(seeded, "history", "mid", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = data["rows"]
    assert [r["first"] for r in rows] == list(range(1, 42)) and {r["kind"] for r in rows} == {"iteration"}
    assert data["direction"] == "higher"
    for row in (rows[0], rows[20], rows[-1]):
        text = seeded.remote_file(row["source"])
        assert text is not None
        assert text.splitlines()[row["line"] - 1].startswith(f"### Iteration {row['first']} ")
    assert rows[0]["source"].startswith("archive/mid/") and rows[-1]["source"] == "mid.md"
    assert rows[-1]["change"] == "Port module m3 to Go" and rows[-1]["date"] == "2026-01-06 09:30"
    bests = [r["best"] for r in rows if r["best"] is not None]
    assert bests == sorted(bests) and bests[-1] == 130


def test_history_csv_and_table(seeded: Repos) -> None:
    proc = sf(seeded, "history", "mid", "--csv")
    assert proc.returncode == 0, proc.stderr
    table = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(table) == 41 and table[-1]["metric"] == "130" and table[0]["first"] == "1"
    text = sf(seeded, "history", "mid", "-n", "5")
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["ITER", "DATE", "STATUS", "METRIC", "BEST", "WHERE", "CHANGE"]
    assert len(lines) == 8 and lines[5].startswith("41 ") and "Port module m3 to Go" in lines[5]
    assert lines[6] == "iteration 41: best metric 130 (was 127.86)"  # what the record of iteration 41 changed
    assert lines[-1].startswith("41 iterations: 3 in mid.md, 38 in the archive") and "newest 5" in lines[-1]


def test_history_of_a_missing_program_is_not_found(seeded: Repos) -> None:
    proc = sf(seeded, "history", "nope")
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1 and "no program 'nope'" in proc.stderr


def test_sparklines_only_on_a_terminal(seeded: Repos) -> None:
    piped = sf(seeded, "status", "mid")
    assert "▁" not in piped.stdout and "metric" not in piped.stdout.splitlines()[1]
    shown = on_terminal(seeded.work, "--remote", "origin", "status", "mid")
    assert "  metric " in shown and "over 41 iterations (best 130, higher is better)" in shown
    assert any(ch in shown for ch in "▁▂▃▄▅▆▇█")
    listed = on_terminal(seeded.work, "--remote", "origin", "list")
    assert "TREND" in listed.splitlines()[0] and "TREND" not in sf(seeded, "list").stdout


def on_terminal(cwd: Path, *args: str) -> str:
    """Run the console script with a pseudo-terminal as stdout (what a person at a terminal has)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([STATEFILE, *args], cwd=cwd, stdout=slave, stderr=subprocess.PIPE, check=False,
                              env={**os.environ, "COLUMNS": "160"})  # fmt: skip
        os.close(slave)
        slave = -1
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert proc.returncode == 0, proc.stderr
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_summary_command_writes_markdown_with_valid_charts(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files(
            {
                "alpha.md": synthetic_state("alpha", 30, seed=1),
                "beta.md": synthetic_state("beta", 12, seed=2, direction="lower"),
                "fresh.md": new_state_file("fresh"),
            },
            "seed",
        )
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    proc = run_statefile("--remote", "origin", "summary", "--out", str(summary), "--max-charts", "2", cwd=repos.work)
    assert proc.returncode == 0, proc.stderr
    text = summary.read_text()
    assert text.startswith("earlier step\n## Autoloop memory — 3 programs\n")  # appended, as GitHub expects
    assert "| alpha |" in text and "| fresh |" in text
    blocks = re.findall(r"```mermaid\n(.*?)```", text, re.S)
    assert len(blocks) == 2 and all(validate(b) == [] for b in blocks)
    assert "1 more program has none here" in text
    one = run_statefile("--remote", "origin", "summary", "beta", cwd=repos.work)
    assert one.returncode == 0 and "### beta" in one.stdout and "lower is better" in one.stdout
    assert "### alpha" not in one.stdout
    missing = run_statefile("--remote", "origin", "summary", "nope", cwd=repos.work)
    assert missing.returncode == 3 and "no program 'nope'" in missing.stderr


def test_history_marks_the_iterations_that_paused_and_unpaused(
    paused: Repos, capsys: pytest.CaptureFixture[str]
) -> None:
    text = invoke_statefile(capsys, "--remote", "origin", "history", "perf", cwd=paused.work)
    assert text.code == 0, text.err
    assert [line for line in text.out.splitlines() if line.startswith("iteration ")] == [
        "iteration 4: paused: 3 consecutive errors (last: iteration 4, error); fix the cause, then set Paused to false",
        "iteration 5: unpaused (was paused: 3 consecutive errors (last: iteration 4, error); fix the cause, then set "
        "Paused to false)",
        "iteration 5: best metric 9 (was 5)",
    ]  # the maintainer's pause was no iteration: `log` and `show` have it
    data = json.loads(invoke_statefile(capsys, "--remote", "origin", "--json", "history", "perf", "-n", "1",
                                       cwd=paused.work).out)  # fmt: skip
    assert [(e["iteration"], e["event"]) for e in data["events"]] == [(5, "unpaused"), (5, "best_metric")]
