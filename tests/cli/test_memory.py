"""Agent-memory commands through the real console script on real repositories with a bare remote."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import all_corpus_files, read_raw
from gitutil import Repos, make_repos, run_statefile

from statefile.cli.demo import sample_text
from statefile.model.template import new_state_file
from statefile.store import Store


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return make_repos(tmp_path)


def sf(repos: Repos, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_statefile("--remote", "origin", *args, cwd=repos.work, env=env)


def seed(repos: Repos, files: dict[str, str]) -> None:
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files(files, "seed")


def test_render_never_exceeds_its_budget_on_real_files(repos: Repos) -> None:
    corpus = all_corpus_files()
    chosen = {f"c{n}": read_raw(p) for n, p in enumerate(corpus[::5])}
    seed(repos, {f"{name}.md": text for name, text in chosen.items()})
    # One budget a file, in turn: tests/views/test_render.py holds every budget to it in process, on every file.
    for name, budget in zip(chosen, itertools.cycle((500, 2000, 8000, 50000))):
        proc = sf(repos, "render", name, "--budget", str(budget))
        assert proc.returncode == 0, proc.stderr
        assert len(proc.stdout.rstrip("\n")) <= budget
        assert proc.stdout.rstrip("\n").splitlines()[-1].startswith("[statefile]")
        index = sf(repos, "render", name, "--level", "index")
        assert len(index.stdout) < 1200


def test_search_finds_text_that_lives_only_in_the_archive(repos: Repos) -> None:
    seed(repos, {"long-running.md": sample_text("long-running")})
    needle_text = sample_text("long-running")
    assert sf(repos, "compact", "long-running").returncode == 0
    current = repos.remote_file("long-running.md") or ""
    # Iteration 3's run link is unique to that entry, which compaction folded away.
    marker = next(
        line.split("runs/")[1].rstrip(")") for line in needle_text.splitlines() if line.startswith("### Iteration 3 — ")
    )
    assert marker not in current
    hits = json.loads(sf(repos, "--json", "search", marker).stdout)
    assert hits and hits[0]["path"].startswith("archive/long-running/")
    assert hits[0]["iteration"] == 3


def test_lesson_lifecycle(repos: Repos) -> None:
    assert sf(repos, "init", "perf").returncode == 0
    assert sf(repos, "lesson", "add", "perf", "Warm the cache before timing").returncode == 0
    assert sf(repos, "lesson", "add", "perf", "Old trick", "--expires", "2020-01-31").returncode == 0
    assert sf(repos, "lesson", "add", "perf", "Use for...of over typed arrays").returncode == 0
    removed = sf(repos, "lesson", "remove", "perf", "Warm the cache", "--reason", "superseded by warmup()")
    assert removed.returncode == 0, removed.stderr
    text = repos.remote_file("perf.md") or ""
    assert "Warm the cache" not in text
    archive = repos.remote_file("archive/perf/0001.md") or ""
    assert "superseded by warmup()" in archive and "- Warm the cache before timing" in archive
    listing = sf(repos, "lesson", "restore", "perf")
    assert "Warm the cache before timing" in listing.stdout
    assert sf(repos, "lesson", "restore", "perf", "1").returncode == 0
    assert "- Warm the cache before timing" in (repos.remote_file("perf.md") or "")
    again = sf(repos, "lesson", "restore", "perf", "Warm the cache")
    assert again.returncode == 2 and "already restored" in again.stderr
    # The expired lesson goes to the archive, with its reason, at the next compaction.
    assert sf(repos, "compact", "perf").returncode == 0
    assert "Old trick" not in (repos.remote_file("perf.md") or "")
    archive = repos.remote_file("archive/perf/0001.md") or ""
    assert "Old trick (expires 2020-01-31)" in archive and "expired 2020-01-31" in archive
    # Pin and promote: the shared lesson shows up in every program's view.
    assert sf(repos, "lesson", "pin", "perf", "typed arrays").returncode == 0
    assert "📌" in (repos.remote_file("perf.md") or "")
    assert sf(repos, "lesson", "promote", "perf", "typed arrays").returncode == 0
    assert "typed arrays" in (repos.remote_file("_shared.md") or "")
    assert sf(repos, "init", "other").returncode == 0
    assert "typed arrays" in sf(repos, "render", "other").stdout
    assert [r["program"] for r in json.loads(sf(repos, "--json", "list").stdout)] == ["other", "perf"]


def test_status_reports_pressure(repos: Repos) -> None:
    seed(repos, {"mid-life.md": sample_text("mid-life")})
    report = json.loads(sf(repos, "--json", "status", "mid-life").stdout)
    assert report["size_bytes"] == len(sample_text("mid-life").encode())
    assert report["max_bytes"] == 30720
    assert "next_record_triggers_aggressive" in report
    human = sf(repos, "status")
    assert human.returncode == 0 and "mid-life" in human.stdout


SUMMARIZERS = {
    "good": "import sys, json; d = json.load(sys.stdin); print(f'{len(d)} entries, mostly tuning')",
    "failing": "import sys; sys.exit(3)",
    "verbose": "print('x' * 5000)",
    "multiline": "print('one'); print('two')",
}


@pytest.mark.parametrize("kind", list(SUMMARIZERS))
def test_summarizer_hook_is_used_only_when_it_behaves(repos: Repos, tmp_path: Path, kind: str) -> None:
    script = tmp_path / f"{kind}.py"
    script.write_text(SUMMARIZERS[kind] + "\n")
    seed(repos, {"mid-life.md": sample_text("mid-life")})
    env = {"STATEFILE_SUMMARIZER": f"{sys.executable} {script}", "STATEFILE_SUMMARIZER_TIMEOUT": "20"}
    proc = sf(repos, "record", "mid-life", "--status", "accepted", "--metric", "200", env=env)
    assert proc.returncode == 0, proc.stderr
    text = repos.remote_file("mid-life.md") or ""
    range_lines = [line for line in text.splitlines() if line.startswith("### Iters ")]
    assert range_lines
    if kind == "good":
        assert any("entries, mostly tuning" in line for line in range_lines)
    else:
        assert not any("xxxxx" in line or line.endswith("one") for line in range_lines)
        assert all("metric" in line for line in range_lines)


def test_a_cli_hint_repeats_the_options_that_chose_the_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As seen (issue 22, a newcomer on path 2): `statefile --repo-memory render …` ended with `more: statefile
    expand long-running 233`, which, without the option, looked for a branch the agent's checkout does not have.
    A hint repeats the global options that chose the memory, and runs as written."""
    import shlex

    from statefile.cli import cli
    from statefile.cli.run import invoke

    folder = tmp_path / "memory folder"
    folder.mkdir()
    (folder / "long-running.md").write_text(sample_text("long-running"), encoding="utf-8")
    assert invoke(cli, ["--dir", str(folder), "render", "long-running", "--budget", "3000"]) == 0
    notice = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    hints = [part.strip() for part in notice.partition("more:")[2].split("·")]
    assert hints and all(h.startswith(f"statefile --dir {shlex.quote(str(folder))} ") for h in hints), notice
    for hint in hints:
        assert invoke(cli, shlex.split(hint)[1:]) == 0, hint
        capsys.readouterr()


def test_status_over_every_program_shows_the_unreadable_ones(unreadable_folder: Path) -> None:
    """`status` left a link or FIFO named as a program out, silently (list and check named them)."""
    broken = {"linked", *({"piped"} if hasattr(os, "mkfifo") else set())}
    proc = run_statefile("--dir", str(unreadable_folder), "status", cwd=unreadable_folder.parent)
    assert proc.returncode == 0, proc.stderr
    assert "perf: " in proc.stdout
    for name in broken:
        assert f"{name}: unreadable: " in proc.stdout, proc.stdout
    data = json.loads(
        run_statefile("--dir", str(unreadable_folder), "--json", "status", cwd=unreadable_folder.parent).stdout
    )
    assert sorted(data) == sorted({"perf", *broken})
    assert all(data[name]["status"] == "unreadable" and data[name]["error"] for name in broken)
    assert data["perf"]["size_bytes"] == len(new_state_file("perf").encode())


def test_status_of_a_named_unreadable_program_is_still_an_error(unreadable_folder: Path) -> None:
    """Found by the cold review of issue 15: status of a named unreadable program is still an error."""
    proc = run_statefile("--dir", str(unreadable_folder), "status", "linked", cwd=unreadable_folder.parent)
    assert proc.returncode == 7 and proc.stderr.count("\n") == 1 and "symbolic link" in proc.stderr
