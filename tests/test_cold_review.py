"""What a cold tester found after the hostile run's fixes (issue 15, third pass), each built from its input.

Every case ran against the installed console script; the ones here are the commands that go over every program
or echo what was typed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from statefile.model.template import new_state_file

LONGEST_LINE = 1000  # what tests/hostile calls an overlong line


def sf(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """statefile, failed by the timeout if it hangs."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("statefile")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder store with one good program, a link and a FIFO named as programs."""
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "perf.md").write_text(new_state_file("perf"), "utf-8")
    (memory / "linked.md").symlink_to(memory / "perf.md")
    if hasattr(os, "mkfifo"):
        os.mkfifo(memory / "piped.md")
    return memory


def test_status_over_every_program_shows_the_unreadable_ones(folder: Path) -> None:
    """`status` left a link or FIFO named as a program out, silently (list and check named them)."""
    broken = {"linked", *({"piped"} if hasattr(os, "mkfifo") else set())}
    proc = sf("--dir", str(folder), "status", cwd=folder.parent)
    assert proc.returncode == 0, proc.stderr
    assert "perf: " in proc.stdout
    for name in broken:
        assert f"{name}: unreadable: " in proc.stdout, proc.stdout
    data = json.loads(sf("--dir", str(folder), "--json", "status", cwd=folder.parent).stdout)
    assert sorted(data) == sorted({"perf", *broken})
    assert all(data[name]["status"] == "unreadable" and data[name]["error"] for name in broken)
    assert data["perf"]["size_bytes"] == len(new_state_file("perf").encode())


def test_status_of_a_named_unreadable_program_is_still_an_error(folder: Path) -> None:
    proc = sf("--dir", str(folder), "status", "linked", cwd=folder.parent)
    assert proc.returncode == 7 and proc.stderr.count("\n") == 1 and "symbolic link" in proc.stderr


def test_a_long_query_or_path_is_cut_in_what_is_printed(folder: Path) -> None:
    """A pasted 100 KB query came back in full in "no matches for …"; a 100 KB path twice in check's report."""
    for name in ("linked.md", "piped.md"):
        (folder / name).unlink(missing_ok=True)
    found = sf("--dir", str(folder), "search", "q" * 100_000, cwd=folder.parent)
    assert found.returncode == 0 and "no matches for" in found.stdout
    path = "c" * 100_000 + ".md"
    checked = sf("check", path, cwd=folder.parent)
    assert checked.returncode == 1 and "cannot read" in checked.stdout
    for proc in (found, checked):
        lines = (proc.stdout + proc.stderr).splitlines()
        assert lines and max(len(line) for line in lines) < LONGEST_LINE, [len(line) for line in lines]
