"""FolderStore: the same interface over a plain folder (gh-aw's repo-memory clone), with locking and atomic writes."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from storeutil import appender, git, make_repo

from statefile.errors import BudgetError, NotFoundError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.store import Change, FolderStore
from statefile.store.folder import LOCK_NAME


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "repo-memory" / "autoloop"
    path.mkdir(parents=True)
    return path


def test_update_creates_reads_and_rewrites_the_state_file(folder: Path) -> None:
    store = FolderStore(folder)
    assert store.read("perf") is None and store.programs() == {}
    result = store.update("perf", appender("- one"), "statefile: one")
    assert result.commit is None and result.landed and result.files == ("perf.md",)
    assert (folder / "perf.md").read_text() == "# Autoloop: perf\n\n- one\n"
    store.update("perf", appender("- two"), "statefile: two")
    doc = store.read("perf")
    assert doc is not None and doc.render() == "# Autoloop: perf\n\n- one\n- two\n"
    assert store.log("perf") == []
    assert [p.name for p in folder.iterdir()] == ["perf.md"]  # no temp files, and no lock file left behind


def test_writes_keep_the_file_mode_and_leave_the_old_bytes_until_the_rename(folder: Path) -> None:
    store = FolderStore(folder)
    store.update("perf", appender("- one"), "statefile: one")
    os.chmod(folder / "perf.md", 0o640)
    inode = os.stat(folder / "perf.md").st_ino
    store.update("perf", appender("- two"), "statefile: two")
    stat = os.stat(folder / "perf.md")
    assert stat.st_mode & 0o777 == 0o640
    assert stat.st_ino != inode  # replaced by rename, never rewritten in place


def test_budget_errors_and_failing_functions_change_nothing(folder: Path) -> None:
    store = FolderStore(folder, max_bytes=60)
    store.update("perf", appender("- one"), "statefile: one")
    before = (folder / "perf.md").read_bytes()
    with pytest.raises(BudgetError, match=r"perf\.md would be over its budget at [\d,]+ of 60 bytes \([\d,.]+%\)"):
        store.update("perf", appender("x" * 80), "statefile: big")

    def boom(doc: StateDocument | None) -> StateDocument:
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        store.update("perf", boom, "statefile: boom")
    assert (folder / "perf.md").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["perf.md"]


def test_archive_files_are_written_beside_the_state_files(folder: Path) -> None:
    store = FolderStore(folder)
    store.update("perf", appender("- one\n- two"), "statefile: two")
    store.update(
        "perf",
        lambda d: Change(parse("# Autoloop: perf\n\n- two\n"), archive="- one\n", archive_label="fold 1"),
        "statefile: compact",
    )
    assert store.archive_parts("perf") == ["0001.md"]
    text = (folder / "archive" / "perf" / "0001.md").read_text()
    assert text == store.read_archive("perf", "0001.md") and "— fold 1\n\n- one\n" in text
    assert store.read_text("perf") == "# Autoloop: perf\n\n- two\n"
    with pytest.raises(NotFoundError):
        store.read_archive("perf", "0009.md")


def test_programs_read_all_and_write_files(folder: Path) -> None:
    store = FolderStore(folder)
    store.write_files({"perf.md": "p ✅\n", "_shared.md": "s\n", "archive/perf/0001.md": "a\n"}, "import")
    (folder / "image.png").write_bytes(b"\x89PNG\xff\xfe")
    (folder / ".hidden.md").write_text("h\n")
    assert store.programs() == {"perf": len("p ✅\n".encode())}
    assert store.read_all() == {"perf.md": "p ✅\n", "_shared.md": "s\n", "archive/perf/0001.md": "a\n"}
    store.write_files({"_shared.md": None, "perf.md": "p2\n"}, "drop shared")
    assert not (folder / "_shared.md").exists() and (folder / "perf.md").read_text() == "p2\n"
    with pytest.raises(BudgetError):
        FolderStore(folder, max_bytes=10).write_files({"big.md": "b" * 20}, "big")
    assert not (folder / "big.md").exists()


def test_a_git_clone_folder_hides_its_git_directory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "clone")
    (repo / "perf.md").write_text("# Autoloop: perf\n")
    store = FolderStore(repo)
    assert store.programs() == {"perf": 17}
    assert sorted(store.read_all()) == ["code.py", "perf.md"]
    store.update("perf", appender("- x"), "statefile: x")
    assert "perf.md" in git(repo, "status", "--porcelain")  # a plain folder write; pushing is gh-aw's job


def test_missing_folder_and_bad_budget_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such folder"):
        FolderStore(tmp_path / "missing")
    with pytest.raises(UsageError, match="max_bytes"):
        FolderStore(tmp_path, max_bytes=0)


WRITER = """
import sys
from statefile.model.document import parse
from statefile.store import FolderStore

store = FolderStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    def fn(doc, i=i):
        text = doc.render() if doc is not None else "# Autoloop: perf\\n\\n"
        return parse(text + f"- {sys.argv[2]}-{i}\\n")
    store.update("perf", fn, "statefile: step")
"""


@pytest.mark.slow
def test_processes_on_one_folder_serialize(folder: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(folder), f"p{n}", "20"], stderr=subprocess.PIPE)
        for n in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    lines = [line for line in (folder / "perf.md").read_text().splitlines() if line.startswith("- ")]
    assert sorted(lines) == sorted(f"- p{n}-{i}" for n in range(4) for i in range(20))


def test_an_update_waits_for_the_lock(folder: Path) -> None:
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    script = WRITER.replace("for i in", "print('ready', flush=True)\nfor i in")
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(folder), "w", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(0.5)  # the child is now blocked in flock, not merely slow to start
        assert proc.poll() is None and not (folder / "perf.md").exists()
    finally:
        os.close(fd)  # releases the lock
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert (folder / "perf.md").read_text().endswith("- w-0\n")
