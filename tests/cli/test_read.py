"""The read commands (statefile.cli.read): check, report, show, list, log, config, expand; render, status, search;
history and summary, through the console script on real repositories with a bare remote."""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLES, GuardRepo, all_corpus_files, guard_run, pinned_identity, read_raw
from gitutil import STATEFILE, Repos, git, invoke_statefile, make_repos, run_statefile
from gitutil import git as repo_git
from mermaid_xychart import validate
from storeutil import git as object_git
from synthetic import synthetic_state

from statefile.cli.write import sample_text
from statefile.errors import EXIT_INVALID_DATA
from statefile.model.document import parse
from statefile.model.template import new_state_file
from statefile.store import Store


def test_check_warns_of_a_heading_whose_number_is_no_whole_number(tmp_path: Path) -> None:
    """Found by the cold review of issue 15: check warns of a heading whose number is no whole number."""
    text = new_state_file("perf").replace("*(No iterations yet.)*\n", "### Iteration 1e308 — float\n\n- text\n")
    (tmp_path / "perf.md").write_text(text, "utf-8")
    proc = run_statefile("check", str(tmp_path / "perf.md"), cwd=tmp_path)
    assert "iteration 1e308, no whole number" in proc.stdout, proc.stdout


def test_case_twins_are_judged_among_state_files_and_the_archive_only(tmp_path: Path) -> None:
    """check failed on `notes/a.txt` beside `Notes/a.txt` (not statefile's files), and printed "0 bytes" for a pair."""
    folder = tmp_path / "memory"
    for path in ("perf.md", "notes/a.txt", "Notes/a.txt"):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(new_state_file("perf") if path == "perf.md" else "x\n", "utf-8")
    assert run_statefile("--dir", str(folder), "check", cwd=tmp_path).returncode == 0
    (folder / "PERF.md").write_text(new_state_file("PERF"), "utf-8")
    proc = run_statefile("--dir", str(folder), "check", cwd=tmp_path)
    assert proc.returncode == 1 and "perf.md and PERF.md differ only in case" in proc.stdout, proc.stdout
    assert "perf.md: FAIL\n" in proc.stdout and "notes" not in proc.stdout.lower()


def _edited(recorded_repos: Repos, tmp_path: Path, mode: str, old: str, new: str) -> list[str]:
    """perf.md with ``old`` replaced by ``new``, on the branch or in a folder; the global flags to use it."""
    data = json.loads(run_statefile("export", cwd=recorded_repos.work).stdout)
    text = data["files"]["perf.md"]["text"]
    assert old in text
    if mode == "dir":
        folder = tmp_path / "folder"
        folder.mkdir()
        (folder / "perf.md").write_text(text.replace(old, new), encoding="utf-8")
        return ["--dir", str(folder)]
    # Not through `edit`, which refuses what check fails: an import writes it the way any other tool could.
    edited = text.replace(old, new)
    data["files"]["perf.md"] = {"text": edited, "sha256": hashlib.sha256(edited.encode()).hexdigest()}
    source = tmp_path / "edited.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    assert run_statefile("-q", "import", "--force", str(source), cwd=recorded_repos.work).returncode == 0
    assert new in git("show", "memory/autoloop:perf.md", cwd=recorded_repos.work)
    return []


@pytest.mark.parametrize("mode", ["branch", "dir"])
@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("| Iteration Count | 1 |", "| Iteration Count | 99999999999999999999 |",
         "'Iteration Count' row says 99,999,999,999,999,999,999"),
        ("| Best Metric | 5 |", "| Best Metric | 1e999999999 |", "'Best Metric' holds '1e999999999'"),
        ("| Target Metric | — |", "| Target Metric | 1e-999999 |", "'Target Metric' holds '1e-999999'"),
        # One more than this and Python refuses to print the number (it was exit 70 in record).
        ("| Iteration Count | 1 |", f"| Iteration Count | {'9' * 4300} |", "row says a number of more than 30 digits"),
    ],
    ids=["iteration-count", "best-metric", "target-metric", "4300-nines"],
)  # fmt: skip
def test_check_fails_on_the_machine_state_numbers_record_refuses(
    recorded_repos: Repos, tmp_path: Path, mode: str, old: str, new: str, needle: str
) -> None:
    """check said ok (exit 0) to numbers record then refused (exit 7): both now ask the same functions."""
    flags = _edited(recorded_repos, tmp_path, mode, old, new)
    checked = run_statefile(*flags, "check", cwd=recorded_repos.work)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "error: implausible-machine-state" in checked.stdout and needle in checked.stdout, checked.stdout
    recorded = run_statefile(*flags, "record", "perf", "--status", "accepted", "--metric", "6", cwd=recorded_repos.work)
    assert recorded.returncode == EXIT_INVALID_DATA and needle in recorded.stderr, recorded.stderr
    assert len(recorded.stderr.strip().splitlines()) == 1


def test_list_columns_line_up_and_values_read_as_words(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guard rail (issue 13): list columns line up and values read as words; the memory is left exactly as it was."""
    assert guard_run(capsys, "--remote", "origin", "init", "a").code == 0  # a short name, never run
    lines = guard_run(capsys, "--remote", "origin", "list").out.splitlines()
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
    shown = guard_run(capsys, "--remote", "origin", "show", "a").out
    assert "None" not in shown and "False" not in shown and "['" not in shown
    assert "Paused              no" in shown and "history: 0 iterations, 0 ranges" in shown


def test_check_fails_on_links_at_the_shared_lessons_and_in_an_archive(initialized_repos: Repos) -> None:
    """The gate read only the programs' own files: a link as _shared.md or as an archive part passed."""
    repo_git("fetch", "--quiet", "origin", cwd=initialized_repos.work, check=False)
    listing = repo_git("ls-tree", "memory/autoloop", cwd=initialized_repos.work)
    work = initialized_repos.work
    link = object_git(work, "hash-object", "-w", "--stdin", input=b"/etc/passwd").strip()
    archive = object_git(work, "mktree", input=f"120000 blob {link}\t0001.md\n".encode()).strip()
    folder = object_git(work, "mktree", input=f"040000 tree {archive}\tperf\n".encode()).strip()
    full = listing + f"120000 blob {link}\t_shared.md\n040000 tree {folder}\tarchive\n"
    tree = object_git(work, "mktree", input=full.encode()).strip()
    commit = repo_git("commit-tree", tree, "-p", "memory/autoloop", "-m", "links", cwd=initialized_repos.work).strip()
    repo_git("update-ref", "refs/heads/memory/autoloop", commit, cwd=initialized_repos.work)
    proc = run_statefile("check", cwd=initialized_repos.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "_shared.md on branch memory/autoloop is a symbolic link" in proc.stdout
    assert "archive/perf/0001.md on branch memory/autoloop is a symbolic link" in proc.stdout


def test_check_fails_on_names_differing_only_in_case(initialized_repos: Repos, tmp_path: Path) -> None:
    """check and list showed PERF and perf side by side, exit 0, in both modes."""
    blob = object_git(initialized_repos.work, "hash-object", "-w", "--stdin", input=b"x\n").strip()

    def tree(listing: str) -> str:
        return object_git(initialized_repos.work, "mktree", input=listing.encode()).strip()

    perf = tree(tree(f"100644 blob {blob}\t0001.md\n").join(["040000 tree ", "\tperf\n"]))
    top = repo_git("ls-tree", "memory/autoloop", cwd=initialized_repos.work) + f"040000 tree {perf}\tArchive\n"
    top += f"040000 tree {perf}\tarchive\n" + repo_git(
        "ls-tree", "memory/autoloop", "perf.md", cwd=initialized_repos.work
    ).replace("\tperf.md", "\tPERF.md")
    commit = repo_git(
        "commit-tree", tree(top), "-p", "memory/autoloop", "-m", "twins", cwd=initialized_repos.work
    ).strip()
    repo_git("update-ref", "refs/heads/memory/autoloop", commit, cwd=initialized_repos.work)
    proc = run_statefile("check", cwd=initialized_repos.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "error: perf.md and PERF.md differ only in case" in proc.stdout
    assert "error: archive/ and Archive/ differ only in case" in proc.stdout

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "perf.md").write_text(
        repo_git("show", "memory/autoloop:perf.md", cwd=initialized_repos.work), encoding="utf-8"
    )
    assert run_statefile("--dir", str(folder), "check", cwd=tmp_path).returncode == 0
    (folder / "Perf.md").write_bytes((folder / "perf.md").read_bytes())
    proc = run_statefile("--dir", str(folder), "check", cwd=tmp_path)
    assert proc.returncode == 1 and "error: perf.md and Perf.md differ only in case" in proc.stdout, proc.stdout


@pytest.mark.parametrize("heading", ["## 2. ⚙️ Machine State", "## [1] ⚙️ Machine State", "## Machine State"])
def test_a_machine_state_heading_the_scheduler_cannot_find_fails_check(tmp_path: Path, heading: str) -> None:
    """statefile reads a decorated Machine State heading; the scheduler's re.search for the exact bytes does not,
    so check fails (exit 1) and the next write restores the exact heading."""
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(synthetic_state("perf", 3).replace("## ⚙️ Machine State", heading), "utf-8")
    proc = run_statefile("--dir", str(folder), "check", "perf", cwd=tmp_path)
    assert proc.returncode == 1 and "machine-state-heading" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert run_statefile("--dir", str(folder), "record", "perf", "--status", "rejected", cwd=tmp_path).returncode == 0
    assert "\n## ⚙️ Machine State\n" in (folder / "perf.md").read_text("utf-8")
    assert run_statefile("--dir", str(folder), "check", "perf", cwd=tmp_path).returncode == 0


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


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return make_repos(tmp_path)


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
