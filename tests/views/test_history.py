"""``statefile history``: every iteration a program's file and archive know, as rows — pure, then through the
console script on a real repository with a bare remote."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from conftest import SAMPLES, pinned_identity
from gitutil import STATEFILE, Repos, git, invoke_statefile, make_repos, run_statefile

from statefile.model.archive import archive_entries, make_chunk, part_header
from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange, render_iteration
from statefile.model.template import new_state_file
from statefile.store import Store
from statefile.views.history import history_rows
from statefile.views.summary import where_sentence


def entry(n: int, status: str = "accepted", metric: str | None = None, change: str | None = None) -> str:
    return render_iteration(
        number=n, when=f"2026-01-{n:02d} 10:00", status=status, metric=metric, change=change or f"change {n}"
    )


def state(entries: list[str], direction: str = "higher") -> str:
    base = new_state_file("perf", metric_direction=direction)
    return base.replace("*(No iterations yet.)*\n", "".join(entries))


def archive(*chunks: str) -> str:
    return part_header("perf", 1) + "".join(
        make_chunk(c, when="2026-02-01T00:00:00Z", what="compaction") for c in chunks
    )


# -- the archive read with the state file's entry parser ----------------------------------------------------------


def test_archive_entries_are_parsed_like_file_entries() -> None:
    text = archive(
        entry(2, metric="5") + "```\n### Iteration 99 — inside a fence\n```\n\n",
        "- Iter 3: ❌ failed\n- a removed lesson bullet\n\n"
        "### Iters 1–27 — ✅ 14 · archive/perf/\n\n- Iter 4: a note\n",
    )
    found = archive_entries(text)
    assert [type(f.entry).__name__ for f in found] == ["Iteration", "Iteration", "IterationRange"]
    first, bullet, rng = (f.entry for f in found)
    # As in the state file: a bullet entry above the chunk's first heading is an entry; below a heading, a bullet
    # is that entry's text, however it reads.
    assert rng.raw.endswith("- Iter 4: a note\n")
    assert isinstance(first, Iteration) and first.number == 2 and first.metric == "5"
    assert "Iteration 99" in first.raw  # the fenced heading is text inside entry 2, not an entry of its own
    assert isinstance(rng, IterationRange) and (rng.first, rng.last) == (1, 27)
    assert isinstance(bullet, Iteration) and bullet.number == 3
    assert bullet.raw == "- Iter 3: ❌ failed\n- a removed lesson bullet\n\n"
    lines = text.splitlines()
    assert all(lines[f.line - 1].startswith(("### Iter", "- Iter")) for f in found)
    assert {f.chunk for f in found} == {"compaction"} and found[0].archived == "2026-02-01T00:00:00Z"


# -- rows -----------------------------------------------------------------------------------------------------------


def test_rows_join_file_and_archive_once_per_iteration() -> None:
    doc = parse(state([entry(5, metric="9", change="Port module m3 to Go"), entry(4, "rejected", "3")]))
    old = archive(
        entry(1, metric="1") + entry(2, "error") + "### Iters 1–3 — ✅ 2 ⚠️ 1 · archive/perf/\n\n",
        "### Iters 1–4 — ✅ 2 ❌ 1 ⚠️ 1 · archive/perf/\n\n" + entry(3, metric="4") + entry(4, "rejected", "2"),
    )
    history = history_rows(doc, "perf", [("0001.md", old)])
    assert [(r.kind, r.first) for r in history.rows] == [("iteration", n) for n in range(1, 6)]
    by = {r.first: r for r in history.rows}
    # The file's copy of iteration 4 wins over the archived one; archived rows say where they live.
    assert by[4].metric == "3" and by[4].source == "perf.md"
    assert by[3].source == "archive/perf/0001.md" and old.splitlines()[by[3].line - 1].startswith("### Iteration 3")
    assert by[5].change == "Port module m3 to Go" and by[5].date == "2026-01-05 10:00"
    # Best so far counts accepted metrics only, in the Metric Direction.
    assert [r.best for r in history.rows] == [1.0, 1.0, 4.0, 4.0, 9.0]
    assert history.points() == [(1, 1.0), (3, 4.0), (4, 3.0), (5, 9.0)]


def test_a_range_without_detail_is_one_aggregated_row() -> None:
    doc = parse(
        state(
            [
                entry(7, metric="0.5"),
                entry(6, metric="0.6"),
                "### Iters 1–5 — ✅ 3 ❌ 2 · 2026-01-01…2026-01-05 · metric 0.9→0.7 · early work · archive/perf/\n\n",
            ],
            direction="lower",
        )
    )
    history = history_rows(doc, "perf")
    first = history.rows[0]
    assert (first.kind, first.first, first.last, first.label) == ("range", 1, 5, "1–5")
    assert first.counts == {"accepted": 3, "rejected": 2, "error": 0, "other": 0}
    assert first.metric == "0.9→0.7" and first.value == 0.7 and first.date == "2026-01-01…2026-01-05"
    assert first.change == "early work"
    assert history.iterations == 7 and history.direction == "lower"
    assert [r.best for r in history.rows] == [0.7, 0.6, 0.5]


def test_a_complete_entry_wins_over_a_partial_copy_and_overlapping_ranges_show_what_they_add() -> None:
    history = history_rows(parse((SAMPLES / "messy.md").read_text()), "messy")
    labels = [r.label for r in history.rows]
    assert labels == ["1–19", "20–32", "30-38".replace("-", "–"), "39", "40", "41"]
    row39 = history.rows[3]
    assert row39.date == "2026-06-01 20:40"  # not the (partial) copy written at 20:10


def test_no_document_and_no_archive_is_no_rows() -> None:
    assert history_rows(None, "perf").rows == ()


# -- through the console script -------------------------------------------------------------------------------------


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


def test_history_counts_each_known_number_once() -> None:
    """A pair counts its two numbers (not the gap between them); a range and the entries it overlaps count once."""
    doc = parse(state([entry(5), "### Iteration 7 & 12 — ✅ a pair\n\n", "### Iters 1–4 — ✅ 4 · folded\n\n"]))
    history = history_rows(doc, "perf", [("0001.md", archive(entry(3) + entry(4)))])
    # Known: 1–4 (the range; 3 and 4 also archived in detail), 5 (file), 7 and 12 (the pair); 6 and 8–11 never ran.
    assert history.covered == ((1, 5), (7, 7), (12, 12))
    assert history.iterations == 7
    assert (history.in_file, history.archived, history.only_in_ranges) == (3, 2, 2)
    assert where_sentence(history) == "7 iterations: 3 in perf.md, 2 in the archive, 2 only in range lines"


# -- pauses, un-pauses, completion and best metric, from the branch history (issue 22) ----------------------------


@pytest.fixture
def paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Repos:
    """perf: a best of 5, three errors (the third pauses it), an accepted 9 (un-pauses it, new best), then a
    maintainer's edit that pauses it by hand — the case a maintainer had to `log -p | grep "Pause Reason"` for."""
    repos = make_repos(tmp_path)
    doc = parse(new_state_file("perf", target_metric="100")).with_fields({"Best Metric": 5, "Iteration Count": 1})
    with Store.open(repos.work, remote="origin") as store:
        store.write_files({"perf.md": doc.render()}, "seed")
    for args in (["--status", "error"],) * 3 + (["--status", "accepted", "--metric", "9"],):
        assert invoke_statefile(capsys, "--remote", "origin", "record", "perf", *args, cwd=repos.work).code == 0
    with Store.open(repos.work, remote="origin") as store:
        text = store.read_text("perf") or ""
        held = parse(text).with_fields({"Paused": True, "Pause Reason": "hold for the release review"})
        store.write_files({"perf.md": held.render()}, "maintainer: hold perf")
    return repos


def test_log_shows_when_and_why_a_program_paused_and_unpaused(
    paused: Repos, capsys: pytest.CaptureFixture[str]
) -> None:
    text = invoke_statefile(capsys, "--remote", "origin", "log", "perf", cwd=paused.work)
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    events = [line.strip() for line in lines if line.strip().startswith("↳")]
    assert events == [
        "↳ paused: hold for the release review",
        "↳ unpaused (was paused: 3 consecutive errors (last: iteration 4, error); fix the cause, then set Paused to "
        "false)",
        "↳ best metric 9 (was 5)",
        "↳ paused: 3 consecutive errors (last: iteration 4, error); fix the cause, then set Paused to false",
    ]
    assert lines[lines.index(next(line for line in lines if "hold for the release" in line)) - 1].endswith(
        "maintainer: hold perf"
    )  # each event sits under the commit that made it
    data = json.loads(invoke_statefile(capsys, "--remote", "origin", "--json", "log", "perf", cwd=paused.work).out)
    assert [[e["event"] for e in row["events"]] for row in data] == [
        ["paused"], ["unpaused", "best_metric"], ["paused"], [], [], [],
    ]  # fmt: skip
    assert data[2]["iteration"] == 4 and data[2]["events"][0]["reason"].startswith("3 consecutive errors")
    best = {"event": "best_metric", "before": "5", "after": "9", "text": "best metric 9 (was 5)"}
    assert data[1]["events"][1] == best
    patched = invoke_statefile(capsys, "--remote", "origin", "log", "perf", "-p", "-n", "1", cwd=paused.work)
    assert "    ↳ paused: hold for the release review" in patched.out.splitlines()
    one = json.loads(invoke_statefile(capsys, "--remote", "origin", "--json", "log", "perf", "-n", "1",
                                      cwd=paused.work).out)  # fmt: skip
    assert len(one) == 1 and one[0]["events"][0]["event"] == "paused"


def test_show_says_since_when_and_why_a_program_is_paused(paused: Repos, capsys: pytest.CaptureFixture[str]) -> None:
    shown = invoke_statefile(capsys, "--remote", "origin", "show", "perf", cwd=paused.work)
    assert shown.code == 0, shown.err
    tip = git("rev-parse", "origin/memory/autoloop", cwd=paused.work).strip()
    line = next(line for line in shown.out.splitlines() if line.startswith("paused: "))
    assert line.startswith("paused: hold for the release review — since 20") and line.endswith(f"commit {tip[:10]}")
    data = json.loads(invoke_statefile(capsys, "--remote", "origin", "--json", "show", "perf", cwd=paused.work).out)
    assert data["paused"]["reason"] == "hold for the release review" and data["paused"]["since"]["commit"] == tip
    assert "completed" not in data


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
