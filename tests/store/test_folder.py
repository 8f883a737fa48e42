"""FolderStore: the same interface over a plain folder (gh-aw's repo-memory clone), with locking and atomic writes."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import only_error_line
from gitutil import run_statefile
from storeutil import appender, git, make_repo, one_error_line
from synthetic import synthetic_state

from statefile.errors import (
    EXIT_CHECK_FAILED,
    EXIT_ENVIRONMENT,
    EXIT_INVALID_DATA,
    EXIT_NOT_FOUND,
    BudgetError,
    InvalidDataError,
    NotFoundError,
    UsageError,
)
from statefile.model.archive import ArchiveLayout
from statefile.model.document import StateDocument, parse
from statefile.store import Change, FolderStore, Store
from statefile.store.folder import LOCK_NAME, STALE_TEMP_SECONDS


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


def test_a_folder_where_the_lock_file_goes_fails_once(tmp_path: Path) -> None:
    """Found by the hostile run (issue 15): a folder where the lock file goes fails once."""
    folder = tmp_path / "memory"
    folder.mkdir()
    for name in ("perf", "other"):
        assert run_statefile("--dir", str(folder), "-q", "init", name, cwd=tmp_path).returncode == 0
    (folder / ".statefile.lock").unlink(missing_ok=True)
    (folder / ".statefile.lock").mkdir()
    proc = run_statefile("--dir", str(folder), "compact", "--all", "--aggressive", cwd=tmp_path)
    assert proc.returncode == EXIT_ENVIRONMENT
    assert "lock file" in only_error_line(proc)


@pytest.mark.parametrize("where", ["perf.md", "archive/perf/0001.md", "_shared.md"])
def test_a_fifo_in_a_folder_store_is_an_error_not_a_hang(tmp_path: Path, where: str) -> None:
    """Found by the adversarial run (issue 15): a fifo in a folder store is an error not a hang."""
    folder = tmp_path / "memory"
    (folder / "archive" / "perf").mkdir(parents=True)
    if where != "perf.md":
        (folder / "perf.md").write_text(synthetic_state("perf", 4, seed=2))
    os.mkfifo(folder / where)
    commands = [["show", "perf"], ["record", "perf", "--status", "accepted"], ["render", "perf"], ["search", "x"],
                ["export"], ["expand", "perf", "999"], ["status", "perf"]]  # fmt: skip
    # The commands that must open the FIFO: they fail with a clear error; the others simply never touch it.
    reads_it = {"perf.md": {a[0] for a in commands}, "archive/perf/0001.md": {"search", "export", "expand"},
                "_shared.md": {"render", "search", "export"}}[where]  # fmt: skip
    for args in commands:
        start = time.monotonic()
        proc = run_statefile("--dir", str(folder), *args, cwd=tmp_path)
        assert time.monotonic() - start < 15
        if args[0] not in reads_it and proc.returncode in (0, EXIT_NOT_FOUND):
            assert "Traceback" not in proc.stderr, (args, proc.stderr)
            continue
        assert proc.returncode == EXIT_INVALID_DATA, (args, proc.stderr)
        assert "is a FIFO, not a regular file" in one_error_line(proc), (args, proc.stderr)
    assert (folder / where).exists() and not (folder / where).is_file()


def test_a_folder_named_like_a_state_file_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a folder named like a state file is refused before it is opened."""
    (tmp_path / "perf.md").mkdir()
    with pytest.raises(InvalidDataError, match=r"perf\.md in .* is a folder, not a regular file"):
        FolderStore(tmp_path).read_text("perf")


def test_a_folder_store_reports_what_it_cannot_read(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): a folder store reports what it cannot read."""
    (tmp_path / "ok.md").write_text(synthetic_state("ok", 3, seed=1))
    (tmp_path / "dir.md").mkdir()
    (tmp_path / "link.md").symlink_to(tmp_path / "ok.md")
    os.mkfifo(tmp_path / "pipe.md")
    found = FolderStore(tmp_path).unreadable()
    assert sorted(found) == ["dir", "link", "pipe"]
    assert "folder" in found["dir"] and "symbolic link" in found["link"] and "FIFO" in found["pipe"]
    checked = run_statefile("--dir", str(tmp_path), "check", cwd=tmp_path)
    assert checked.returncode == EXIT_CHECK_FAILED and checked.stdout.count("error:") == 3


@pytest.mark.parametrize("kind", ["folder", "git"])
def test_only_names_that_look_like_programs_are_reported_unreadable(tmp_path: Path, kind: str) -> None:
    """Issue 23 review: a reserved device name that looks like a program (``con.md``) is reported; a markdown file
    that is no program at all (``aux.old notes.md``) is just another file, in both stores."""
    files = {"perf.md": synthetic_state("perf", 2, seed=1), "con.md": "x\n", "aux.old notes.md": "notes\n"}
    if kind == "folder":
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        store: Store = FolderStore(tmp_path)
    else:
        repo = make_repo(tmp_path / "repo")
        git(repo, "checkout", "-q", "--orphan", "memory/autoloop")
        for name, text in files.items():
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "seed")
        git(repo, "checkout", "-q", "main")
        store = Store.open(repo)
    with store:
        assert list(store.unreadable()) == ["con"] and list(store.programs()) == ["perf"]


def test_the_folder_store_removes_temporary_files_a_killed_writer_left(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): the folder store removes temporary files a killed writer left."""
    store = FolderStore(tmp_path, max_bytes=4000)
    store.update("perf", appender("- one"), "statefile: one")
    (tmp_path / "archive" / "perf").mkdir(parents=True)
    old = [tmp_path / ".perf.md.k3j9x_a1.tmp", tmp_path / "archive" / "perf" / ".0001.md.zz9_q2b7.tmp"]
    fresh = tmp_path / ".perf.md.n0w_n0w1.tmp"  # could be a live writer's, were there one without the lock
    unrelated = tmp_path / ".notes.tmp"
    for path in [*old, fresh, unrelated]:
        path.write_text("half a write")
    past = time.time() - STALE_TEMP_SECONDS - 5
    for path in old:
        os.utime(path, (past, past))
    store.update("perf", lambda doc: Change(parse("# Autoloop: perf\n\n- two\n"), archive="- one\n"), "statefile: two")
    assert not any(p.exists() for p in old) and fresh.exists() and unrelated.exists()


def test_a_folder_that_is_a_link_keeps_its_root_archive(tmp_path: Path) -> None:
    """Issue 23 review: gh-aw's repo-memory folder may be a link to a folder; with the ``root`` archive layout (the
    parts beside the state files) a write that archives, and reading the parts back, work through it."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    store = FolderStore(tmp_path / "link", archive_layout=lambda program: ArchiveLayout("root"))
    store.write_files({"perf.md": "# Autoloop: perf\n\n- one\n- two\n"}, "seed")
    store.update("perf", lambda doc: Change(parse("# Autoloop: perf\n\n- two\n"), archive="- one\n"), "fold one")
    assert store.archive_parts("perf") == ["0001.md"]
    assert "- one" in (real / "_archive.perf.0001.md").read_text(encoding="utf-8")
    assert (real / "perf.md").read_text(encoding="utf-8") == "# Autoloop: perf\n\n- two\n"
