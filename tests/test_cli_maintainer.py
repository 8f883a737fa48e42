"""What a maintainer runs to look after the memory, through the console script on a real repository with a bare
remote: lesson list, render's Program Info, repair, log -p, list --sort/--over-budget, compact --dry-run."""

from __future__ import annotations

import json
import subprocess

import pytest
from gitutil import Repos, make_repos, run_statefile

from statefile.model.synthetic import synthetic_state
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
    assert sf(repos, "init", "perf").returncode == 0
    for text in ("Warm the cache before timing", "Radix beats comparison sort above 1k rows"):
        assert sf(repos, "lesson", "add", "perf", text).returncode == 0
    assert sf(repos, "lesson", "add", "perf", "Old trick", "--expires", "2030-01-31").returncode == 0
    assert sf(repos, "lesson", "pin", "perf", "2").returncode == 0
    listed = sf(repos, "lesson", "list", "perf")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "  1. Warm the cache before timing",
        "  2. 📌 Radix beats comparison sort above 1k rows",
        "  3. Old trick (expires 2030-01-31)",
    ]
    data = json.loads(sf(repos, "lesson", "list", "perf", "--json").stdout)
    assert [(d["number"], d["pinned"], d["expires"]) for d in data] == [(1, False, None), (2, True, None),
                                                                        (3, False, "2030-01-31")]  # fmt: skip
    # The number shown is the number `lesson remove` takes.
    assert sf(repos, "lesson", "remove", "perf", "1", "--reason", "superseded").returncode == 0
    assert (
        sf(repos, "lesson", "list", "perf").stdout.splitlines()[0]
        == "  1. 📌 Radix beats comparison sort above 1k rows"
    )
    assert sf(repos, "lesson", "promote", "perf", "1").returncode == 0
    assert "1 shared lesson in _shared.md" in sf(repos, "lesson", "list", "perf").stdout
    fresh = sf(repos, "init", "fresh")
    assert fresh.returncode == 0 and "has no lessons yet" in sf(repos, "lesson", "list", "fresh").stdout
    missing = sf(repos, "lesson", "list", "nope")
    assert missing.returncode == 3 and "no program 'nope'" in missing.stderr


def test_render_keeps_program_info_ahead_of_twenty_lessons(repos: Repos) -> None:
    seed(repos, {"perf.md": synthetic_state("perf", 60, seed=4, lessons=20)})
    proc = sf(repos, "render", "perf", "--budget", "3000")
    assert proc.returncode == 0, proc.stderr
    assert "**Goal**: Make perf faster, one measured change at a time." in proc.stdout
    assert "lessons" in proc.stdout.splitlines()[-1]  # some lessons were left out, Program Info was not
