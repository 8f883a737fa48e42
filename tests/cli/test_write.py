"""What a maintainer runs to look after the memory, through the console script on a real repository with a bare
remote: lesson list, render's Program Info, repair, log -p, list --sort/--over-budget, compact --dry-run."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import pinned_identity
from gitutil import Ran, Repos, git, invoke_statefile, make_repos, run_statefile

from statefile.model.document import parse
from statefile.model.synthetic import synthetic_state
from statefile.model.template import new_state_file
from statefile.store import Store


@pytest.fixture
def repos(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    return make_repos(tmp_path_factory.mktemp("maintainer"))


def sf(repos: Repos, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_statefile("--remote", "origin", *args, cwd=repos.work, env=env)


def seed(repos: Repos, files: dict[str, str]) -> None:
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files(files, "seed")


def test_lesson_list_shows_the_numbers_other_lesson_commands_take(repos: Repos) -> None:
    doc = parse(new_state_file("perf"))
    for text in ("Warm the cache before timing", "📌 Radix beats comparison sort above 1k rows",
                 "Old trick (expires 2030-01-31)"):  # fmt: skip
        doc = doc.with_lesson(text)
    seed(repos, {"perf.md": doc.render(), "fresh.md": new_state_file("fresh")})
    listed = sf(repos, "lesson", "list", "perf")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(sf(repos, "lesson", "list", "perf", "--json").stdout)
    assert [(d["number"], d["pinned"], d["expires"]) for d in data] == [(1, False, None), (2, True, None),
                                                                        (3, False, "2030-01-31")]  # fmt: skip
    ids = [d["id"] for d in data]
    assert listed.stdout.splitlines() == [
        f"  1. [{ids[0]}] Warm the cache before timing",
        f"  2. [{ids[1]}] 📌 Radix beats comparison sort above 1k rows",
        f"  3. [{ids[2]}] Old trick (expires 2030-01-31)",
    ]
    # The number shown is the number `lesson remove` takes.
    assert sf(repos, "lesson", "remove", "perf", "1", "--reason", "superseded").returncode == 0
    assert (
        sf(repos, "lesson", "list", "perf").stdout.splitlines()[0]
        == f"  1. [{ids[1]}] 📌 Radix beats comparison sort above 1k rows"
    )
    assert sf(repos, "lesson", "promote", "perf", "1").returncode == 0
    assert "1 shared lesson in _shared.md" in sf(repos, "lesson", "list", "perf").stdout
    assert "has no lessons yet" in sf(repos, "lesson", "list", "fresh").stdout
    missing = sf(repos, "lesson", "list", "nope")
    assert missing.returncode == 3 and "no program 'nope'" in missing.stderr


def test_lesson_messages_name_the_lesson_and_a_repeated_restore_by_id_restores_nothing(
    repos: Repos, capsys: pytest.CaptureFixture[str]
) -> None:
    """`lesson remove` and `restore` said "moved the lesson" / "restored the lesson", and `restore perf 1` run twice
    restored two different lessons (the numbers moved up in between)."""
    doc = parse(new_state_file("perf"))
    for text in ("Warm the cache before timing", "Radix beats comparison sort above 1k rows", "Pin the seed"):
        doc = doc.with_lesson(text)
    seed(repos, {"perf.md": doc.render()})

    def run(*args: str) -> Ran:
        return invoke_statefile(capsys, "--remote", "origin", *args, cwd=repos.work)

    ids = [row["id"] for row in json.loads(run("--json", "lesson", "list", "perf").out)]
    first = run("lesson", "remove", "perf", "1", "--reason", "superseded")
    assert first.code == 0 and f"moved lesson {ids[0]} to " in first.out, first.err
    assert "Warm the cache before timing" in first.out and f"lesson restore perf {ids[0]}" in first.out
    second = run("lesson", "remove", "perf", "1", "--reason", "superseded")
    assert f"moved lesson {ids[1]} " in second.out and "Radix beats comparison sort" in second.out
    restored = run("lesson", "restore", "perf", ids[0])
    assert restored.code == 0 and restored.out.startswith(f"restored lesson {ids[0]} ("), restored.out
    assert restored.out.rstrip().endswith(": Warm the cache before timing")
    again = run("lesson", "restore", "perf", ids[0])
    assert again.code == 2 and f"lesson {ids[0]} (Warm the cache before timing) was already restored" in again.err
    assert "Radix beats" not in (repos.remote_file("perf.md") or "")  # no other lesson was restored instead
    by_number = run("lesson", "restore", "perf", "1")  # numbers still work, and say which lesson they took
    assert by_number.code == 0 and "Radix beats comparison sort above 1k rows" in by_number.out
    promoted = run("lesson", "promote", "perf", ids[2])
    assert promoted.code == 0 and promoted.out.startswith(f"promoted lesson {ids[2]} to _shared.md")
    assert promoted.out.rstrip().endswith(": Pin the seed")


def test_record_dry_run_says_what_would_be_recorded_and_writes_nothing(
    repos: Repos, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compact`, `repair` and `apply` had --dry-run; `record` had none."""
    text = parse(synthetic_state("perf", 14, seed=5)).with_fields({"Consecutive Errors": 2, "Paused": False}).render()
    seed(repos, {"perf.md": text})
    tip = repos.remote_tip()

    def run(*args: str) -> Ran:
        return invoke_statefile(capsys, "--remote", "origin", *args, cwd=repos.work)

    said = run("record", "perf", "--status", "error", "--dry-run")
    assert said.code == 0, said.err
    lines = said.out.splitlines()
    assert lines[0].startswith("dry run: would record iteration 15 of perf (⚠️ error), ")
    paused = "  paused: 3 consecutive errors (last: iteration 15, error); fix the cause, then set Paused to false"
    assert paused in lines
    assert any(line.startswith("  compaction: ") and "would go to archive/perf/" in line for line in lines), lines
    data = json.loads(run("--json", "record", "perf", "--status", "accepted", "--metric", "1e9", "--dry-run").out)
    assert data["dry_run"] is True and data["commit"] == "" and data["iteration"] == 15
    assert data["best_metric"]["new_best"] is True and data["best_metric"]["after"] == "1000000000"
    assert repos.remote_tip() == tip and repos.remote_file("perf.md") == text  # nothing was written
    assert git("rev-parse", "refs/heads/memory/autoloop", cwd=repos.work).strip() == tip
    assert run("record", "perf", "--status", "error").out.startswith("recorded iteration 15 of perf")


def test_render_keeps_program_info_ahead_of_twenty_lessons(repos: Repos) -> None:
    seed(repos, {"perf.md": synthetic_state("perf", 60, seed=4, lessons=20)})
    proc = sf(repos, "render", "perf", "--budget", "3000")
    assert proc.returncode == 0, proc.stderr
    assert "**Goal**: Make perf faster, one measured change at a time." in proc.stdout
    assert "lessons" in proc.stdout.splitlines()[-1]  # some lessons were left out, Program Info was not


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    """Three programs of different sizes and ages, one over the budget, each with a little branch history."""
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("three"))
        seed(
            repos,
            {
                "alpha.md": synthetic_state("alpha", 12, seed=1),
                "beta.md": synthetic_state("beta", 240, seed=2),  # ~80 KB: over the 30 KB budget
                "gamma.md": synthetic_state("gamma", 40, seed=3),
            },
        )
        proc = sf(repos, "record", "alpha", "--status", "accepted", "--metric", "999", "--change", "Port module m3",
                  "--at", "2026-06-01T00:00:00+02:00")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    return repos


def test_log_shows_utc_author_and_with_p_the_diff(three: Repos) -> None:
    text = sf(three, "log", "alpha")
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["COMMIT", "WHEN", "(UTC)", "ITER", "AUTHOR", "CHANGE"]
    assert " UTC  " in lines[1] and "#13" in lines[1] and "statefile tests" in lines[1]
    assert lines[1].endswith("statefile: record iteration 13 of alpha (✅ accepted)")
    assert lines[2] == "            ↳ best metric 999 (was 110.65)"  # what the record did to the program's state
    assert lines[3].endswith("seed") and len(lines) == 4
    rows = json.loads(sf(three, "--json", "log", "alpha").stdout)
    assert rows[0]["author"] == "statefile tests <tests@statefile.invalid>" and rows[0]["when_utc"].endswith("Z")
    assert "patch" not in rows[0]
    patched = sf(three, "log", "alpha", "-p", "-n", "1")
    assert patched.returncode == 0, patched.stderr
    out = patched.stdout
    assert out.startswith(f"commit {rows[0]['commit']}\nAuthor: statefile tests <tests@statefile.invalid>\nDate:   ")
    assert "diff --git a/alpha.md b/alpha.md" in out and "+### Iteration 13 — " in out
    assert "+- **Change**: Port module m3" in out and "-| Iteration Count | 12 |" in out
    assert out.count("\ncommit ") == 0  # -n 1: one commit
    data = json.loads(sf(three, "--json", "log", "alpha", "-p").stdout)
    assert data[1]["patch"].startswith("diff --git a/alpha.md b/alpha.md\nnew file mode")


def test_list_sorts_filters_and_totals(three: Repos) -> None:
    by_size = sf(three, "list", "--sort", "size").stdout.splitlines()
    assert [line.split()[0] for line in by_size[1:4]] == ["beta", "gamma", "alpha"]
    assert by_size[-1].startswith("total: 3 programs · ") and "· 1 over budget" in by_size[-1]
    assert "293 iterations" in by_size[-1]  # 13 + 240 + 40 (alpha's record made 13)
    by_iterations = sf(three, "list", "--sort", "iterations").stdout.splitlines()
    assert [line.split()[0] for line in by_iterations[1:4]] == ["beta", "gamma", "alpha"]
    by_run = sf(three, "list", "--sort", "last-run").stdout.splitlines()
    assert by_run[1].split()[0] == "alpha"  # recorded last, at 2026-06-01T00:00:00+02:00
    over = sf(three, "list", "--over-budget").stdout.splitlines()
    assert [line.split()[0] for line in over[1:-1]] == ["beta"] and over[-1].startswith("total: 1 program of 3 · ")
    none = sf(three, "--max-bytes", "10MB", "list", "--over-budget")
    assert none.returncode == 0 and none.stdout.startswith("no program is over its budget")
    rows = json.loads(sf(three, "--json", "list", "--over-budget").stdout)
    assert [r["program"] for r in rows] == ["beta"]
    assert sf(three, "list", "--sort", "colour").returncode == 2


def test_compact_dry_run_summarises_per_program_with_details_on_request(three: Repos) -> None:
    tip = three.remote_tip()
    proc = sf(three, "compact", "--all", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) < 15, proc.stdout  # a summary, not a line per folded iteration
    beta = lines.index(next(line for line in lines if line.startswith("beta: dry run:")))
    assert lines[beta + 1].startswith("  fold 2") and " iterations (#1–2" in lines[beta + 1]
    assert "range lines: Iters " in lines[beta + 1]
    assert lines[-1] == "(--details lists every entry, lesson and avenue that would move)"
    detailed = sf(three, "compact", "beta", "--dry-run", "--details").stdout.splitlines()
    assert sum(1 for line in detailed if line.startswith("    iteration: Iteration ")) > 200
    assert three.remote_tip() == tip
