"""export_json/import_json: byte-identical round trips (corpus, undecodable bytes, hypothesis) and validation."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    GuardRepo,
    all_corpus_files,
    assert_refused,
    drift_heading,
    examples,
    guard_run,
    only_error_line,
    read_raw,
    refs_unchanged,
)
from gitutil import Repos, make_repos, run_statefile
from gitutil import git as repo_git
from hypothesis import given, settings
from hypothesis import strategies as st
from storeutil import LOCAL, blob, fsck_clean, git, make_repo, rev
from synthetic import synthetic_state

from statefile.errors import EXIT_USAGE, UsageError
from statefile.model.template import new_state_file
from statefile.model.text import encode
from statefile.store import FolderStore, GitStore, Store
from statefile.store.exchange import FORMAT, VERSION, check_path, dumps, export_json, import_json, loads
from statefile.store.names import validate_path


def corpus() -> dict[str, str]:
    files = {path.name: read_raw(path) for path in all_corpus_files()}
    files["archive/perf/0001.md"] = "# Archive: perf (part 1)\n\nold\r\nstuff\r"
    files["_shared.md"] = "# Shared lessons\n"
    return files


def round_trip(files: dict[str, str]) -> dict[str, str]:
    return import_json(loads(dumps(export_json(files, branch="memory/autoloop", commit="abc123"))))


def test_corpus_round_trip_is_byte_identical() -> None:
    files = corpus()
    back = round_trip(files)
    assert back.keys() == files.keys()
    for path, text in files.items():
        assert encode(back[path]) == encode(text), path
        assert back[path] == text


def test_schema_shape() -> None:
    data = export_json({"perf.md": "# hi\n", "bad.md": "caf\udce9"}, branch="memory/autoloop", commit=None)
    assert data["format"] == FORMAT and data["version"] == VERSION == 1
    assert data["branch"] == "memory/autoloop" and data["commit"] is None
    assert list(data["files"]) == ["bad.md", "perf.md"]
    assert data["files"]["perf.md"] == {"text": "# hi\n", "bytes": 5, "sha256": hashlib.sha256(b"# hi\n").hexdigest()}
    assert data["files"]["bad.md"]["base64"] == "Y2Fm6Q=="
    assert "text" not in data["files"]["bad.md"]
    # The JSON text is valid UTF-8 (no lone surrogates).
    dumps(data).encode("utf-8")


def test_undecodable_bytes_round_trip() -> None:
    raw = b"# x\r\n\xff\xfe caf\xe9 \xed\xa0\x80 \xf0\x9f\x93\x8c ok\n"
    text = raw.decode("utf-8", "surrogateescape")
    back = round_trip({"x.md": text})
    assert encode(back["x.md"]) == raw
    assert back["x.md"] == text


@settings(max_examples=examples(200))
@given(
    st.dictionaries(
        st.sampled_from(["a.md", "b.md", "_shared.md", "archive/a/0001.md", "archive/a/0002.md"]),
        st.binary(max_size=400) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
        max_size=5,
    )
)
def test_hypothesis_bytes_round_trip(blobs: dict[str, bytes]) -> None:
    files = {path: data.decode("utf-8", "surrogateescape") for path, data in blobs.items()}
    back = round_trip(files)
    assert {path: encode(text) for path, text in back.items()} == blobs


def exported() -> dict[str, Any]:
    return export_json({"perf.md": "# perf\n", "archive/perf/0001.md": "\udcff"}, branch="b", commit="c")


def broken(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(exported())
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="something"), "not a statefile export"),
        (lambda d: d.update(version=2), "newer than this statefile reads"),
        (lambda d: d.update(version="1"), "is not a number"),
        (lambda d: d.update(version=0), "not valid"),
        (lambda d: d.pop("files"), "no 'files' object"),
        (lambda d: d["files"]["perf.md"].update(text="# PERF\n"), "checksum mismatch"),
        (lambda d: d["files"]["perf.md"].update(sha256="xyz"), "malformed sha256"),
        (lambda d: d["files"]["perf.md"].pop("sha256"), "malformed sha256"),
        (lambda d: d["files"]["perf.md"].update(base64="AA=="), "exactly one of"),
        (lambda d: d["files"]["perf.md"].update(bytes=99), "does not match the recorded"),
        (lambda d: d["files"]["perf.md"].update(text=7), "not a string"),
        (lambda d: d["files"]["archive/perf/0001.md"].update(base64="!!"), "not valid base64"),
        (lambda d: d["files"].update({"x.md": "text"}), "not an object"),
        (lambda d: d["files"].update({"../x.md": d["files"]["perf.md"]}), re.escape("'..' segment")),
        (lambda d: d["files"].update({"/etc/x.md": d["files"]["perf.md"]}), "absolute path"),
        (lambda d: d["files"].update({"C:/x.md": d["files"]["perf.md"]}), "absolute path"),
        (lambda d: d["files"].update({"a\\b.md": d["files"]["perf.md"]}), "backslash"),
        (lambda d: d["files"].update({".git/config": d["files"]["perf.md"]}), "inside .git"),
        (lambda d: d["files"].update({"a//b.md": d["files"]["perf.md"]}), re.escape("empty, '.' or '..'")),
        (lambda d: d["files"].update({"a\nb.md": d["files"]["perf.md"]}), "control"),
        # Issue 15: a name no file system holds was accepted (and a folder import crashed writing it, exit 70).
        (lambda d: d["files"].update({"b" * 300 + ".md": d["files"]["perf.md"]}), "303 bytes long, more than the 255"),
        (lambda d: d["files"].update({"archive/" + "é" * 128 + "/0001.md": d["files"]["perf.md"]}), "256 bytes"),
    ],
)
def test_import_refuses_with_one_line_reason(mutate: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        import_json(broken(mutate))
    assert "\n" not in str(info.value)


def test_import_refuses_non_objects_and_bad_json() -> None:
    with pytest.raises(UsageError, match="must be an object"):
        import_json([1, 2])
    with pytest.raises(UsageError, match="not valid JSON"):
        loads("{not json")


def test_export_refuses_bad_paths_and_import_ignores_unknown_keys() -> None:
    with pytest.raises(UsageError, match=re.escape("'..' segment")):
        export_json({"../escape.md": "x"}, branch="b", commit=None)
    data = exported()
    data["exported_at"] = "2026-01-01"
    assert import_json(json.loads(json.dumps(data))) == {"perf.md": "# perf\n", "archive/perf/0001.md": "\udcff"}
    assert check_path("archive/perf/0001.md") == "archive/perf/0001.md"


def test_an_import_naming_a_file_and_a_folder_alike_writes_nothing_and_says_so(tmp_path: Path) -> None:
    """`perf.md` and `perf.md/x` in one export: the folder store wrote `perf.md/x` before failing; the message
    then spoke of names that differ only in case."""
    export = export_json({"perf.md": new_state_file("perf"), "perf.md/x": "x\n"}, branch="memory/autoloop", commit=None)
    source = tmp_path / "export.json"
    source.write_text(json.dumps(export), "utf-8")
    folder = tmp_path / "memory"
    folder.mkdir()
    (tmp_path / "git").mkdir()
    repos = make_repos(tmp_path / "git")
    for args, cwd in ((["--dir", str(folder)], tmp_path), ([], repos.work)):
        proc = run_statefile(*args, "import", str(source), cwd=cwd)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "perf.md is a folder in the export and a file in the export" in proc.stderr
    assert list(folder.iterdir()) == []
    assert repo_git("for-each-ref", "refs/heads/memory", cwd=repos.work) == ""


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"format": "statefile-export", "version": ' + "9" * 5000 + ', "files": {}}', "5,000 digits"),
        ("[" * 100_000 + "]" * 100_000, "nested thousands of levels deep"),
    ],
    ids=["huge-version", "deep-nesting"],
)
def test_import_refuses_hostile_json(recorded_repos: Repos, tmp_path: Path, content: str, needle: str) -> None:
    """Issue 15 (#6, #13), absurd values: import refuses hostile json."""
    source = tmp_path / "export.json"
    source.write_text(content, encoding="utf-8")
    assert_refused(recorded_repos, EXIT_USAGE, "import", str(source), needle=needle)


def test_an_over_budget_export_imports_byte_for_byte(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Guard rail (issue 13): an over budget export imports byte for byte; the memory is left exactly as it was."""
    big = synthetic_state("huge", 120, seed=9)
    assert len(big.encode()) > 30720
    with Store.open(".", remote="origin", max_bytes=10_000_000) as store:
        store.write_files({"huge.md": big}, "an agent wrote it this big")
    export = tmp_path / "memory.json"
    assert guard_run(capsys, "--remote", "origin", "export", "--out", str(export)).code == 0
    imported = guard_run(capsys, "--remote", "origin", "--branch", "memory/restored", "import", str(export))
    assert imported.code == 0, imported.err
    assert "huge.md is over the budget" in imported.out and "statefile compact huge" in imported.out
    assert guard_repo.remote_file("huge.md", "memory/restored") == big
    for name in ("perf", "latency", "pipeline"):
        assert guard_repo.remote_file(f"{name}.md", "memory/restored") == guard_repo.remote_file(f"{name}.md")
    before = guard_repo.refs()
    repeated = guard_run(capsys, "--remote", "origin", "--branch", "memory/restored", "import", str(export))
    assert repeated.code == 0 and repeated.out.startswith("nothing changed")
    refs_unchanged(guard_repo, before)
    same = guard_run(capsys, "--remote", "origin", "import", str(export))  # into the branch it came from
    assert same.code == 0 and same.out.startswith("nothing changed")
    refs_unchanged(guard_repo, before)


def test_import_restores_a_drifted_heading_after_the_exact_copy(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Guard rail (issue 13): import restores a drifted heading after the exact copy; the memory is left exactly as it
    was."""
    drift_heading(capsys, "pipeline")
    export = tmp_path / "memory.json"
    assert guard_run(capsys, "--remote", "origin", "export", "--out", str(export)).code == 0
    result = guard_run(capsys, "--remote", "origin", "--branch", "memory/restored", "import", str(export))
    assert result.code == 0, result.err
    assert "restored the ⚙️ Machine State heading of pipeline.md" in result.out
    exact = repo_git("show", "memory/restored~1:pipeline.md", cwd=guard_repo.remote)
    assert exact == guard_repo.remote_file("pipeline.md")  # the import commit itself is the backup, byte for byte
    assert "## ⚙️ Machine State\n" in guard_repo.remote_file("pipeline.md", "memory/restored")


def _export_with(initialized_repos: Repos, tmp_path: Path, extra: dict[str, str]) -> Path:
    """The branch's export with ``extra`` files added (path → text), as a file to import."""
    data = json.loads(run_statefile("export", cwd=initialized_repos.work).stdout)
    for path, text in extra.items():
        data["files"][path] = {"text": text, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    source = tmp_path / "export.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    return source


@pytest.mark.parametrize("mode", ["branch", "dir"])
def test_import_refuses_a_name_longer_than_a_file_system_holds(
    initialized_repos: Repos, tmp_path: Path, mode: str
) -> None:
    """Accepted on a branch (no checkout could hold it); in a folder the write crashed with ENAMETOOLONG, exit 70."""
    source = _export_with(initialized_repos, tmp_path, {"a" * 300 + ".md": "# x\n"})
    folder = tmp_path / "folder"
    folder.mkdir()
    flags = ["--dir", str(folder)] if mode == "dir" else ["--branch", "memory/restored"]
    proc = run_statefile(*flags, "import", str(source), cwd=initialized_repos.work)
    assert proc.returncode == EXIT_USAGE and "303 bytes long, more than the 255" in only_error_line(proc)
    assert not list(folder.iterdir())
    assert not repo_git("branch", "--list", "memory/restored", cwd=initialized_repos.work).strip()


@pytest.mark.parametrize(
    ("mode", "extra", "needle"),
    [
        ("branch", {"PERF.md": "# Autoloop: PERF\n"}, "PERF.md in the export differs only in case from perf.md on the"),
        ("dir", {"Perf.md": "# Autoloop: Perf\n"}, "Perf.md in the export differs only in case from perf.md in the"),
        ("branch", {"archive/perf/0001.md": "a\n", "Archive/perf/0002.md": "b\n"}, "archive/ in the export differs "
         "only in case from Archive/ in the export"),
    ],
    ids=["beside-the-branch", "beside-the-folder", "within-the-export"],
)  # fmt: skip
def test_import_refuses_names_differing_only_in_case(
    initialized_repos: Repos, tmp_path: Path, mode: str, extra: dict[str, str], needle: str
) -> None:
    """PERF.md beside perf.md (Archive/ beside archive/) was imported; macOS and Windows hold only one of them."""
    source = _export_with(initialized_repos, tmp_path, extra)
    folder = tmp_path / "folder"
    folder.mkdir()
    flags = []
    if mode == "dir":
        (folder / "perf.md").write_text(
            repo_git("show", "memory/autoloop:perf.md", cwd=initialized_repos.work), encoding="utf-8"
        )
        flags = ["--dir", str(folder)]
    before = repo_git("ls-tree", "-r", "--name-only", "memory/autoloop", cwd=initialized_repos.work)
    proc = run_statefile(*flags, "import", "--force", str(source), cwd=initialized_repos.work)
    assert proc.returncode == EXIT_USAGE and needle in only_error_line(proc)
    assert repo_git("ls-tree", "-r", "--name-only", "memory/autoloop", cwd=initialized_repos.work) == before
    assert sorted(p.name for p in folder.iterdir()) == (["perf.md"] if mode == "dir" else [])


ALIASES = ["GIT~1/config", "git~1/hooks/post-checkout", ".git./config", ".GIT/config", ".git\u200c/config",
           "\u200c.git/config", "GITMOD~1", "gi7eba~1", ".gitmodules", ".gitmodules ", ".Gitmodules",
           "x/.git/config", "x/GIT~1", "notes.md:stream", "archive/perf/0001.md.", "con.md", "archive/aux/x.md",
           "a/nul", "archive/perf/0001.md "]  # fmt: skip


@pytest.mark.parametrize("path", ALIASES)
def test_import_refuses_every_alias_of_dotgit(tmp_path: Path, path: str) -> None:
    """Found by the adversarial run (issue 15): import refuses every alias of dotgit."""
    with pytest.raises(UsageError):
        check_path(path)
    with pytest.raises(UsageError):
        validate_path(path)
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(UsageError):
        Store.open(repo).write_files({path: "x\n", "perf.md": "# perf\n"}, "statefile: import")
    with pytest.raises(UsageError):
        FolderStore(tmp_path).write_files({path: "x\n"}, "statefile: import")
    assert rev(repo, LOCAL) is None and not any(p.name.lower().startswith(("git", ".git")) for p in tmp_path.iterdir())


def test_gits_own_fsck_checks_what_an_import_writes(tmp_path: Path) -> None:
    """Found by the adversarial run (issue 15): gits own fsck checks what an import writes."""
    repo = make_repo(tmp_path / "repo")
    with GitStore(repo) as store:
        data = blob(repo, b"x\n")
        bad = git(repo, "mktree", input=f"100644 blob {data}\tGIT~1\n".encode()).strip()
        good = git(repo, "mktree", input=f"100644 blob {data}\tperf.md\n".encode()).strip()
        assert "hasDotgit" in store._objects.fsck(bad, None)  # type: ignore[attr-defined]  # the check git applies, whatever our own rules say
        assert store._objects.fsck(good, None) == ""  # type: ignore[attr-defined]
        assert store._objects.fsck(bad, bad) == ""  # type: ignore[attr-defined]  # only what the old tree lacks
        store.write_files({"perf.md": "# perf\n", "archive/perf/0001.md": "# Archive\n"}, "statefile: import")
    git(repo, "prune", "--expire=now")  # the crafted trees above are garbage; the branch is what must be clean
    fsck_clean(repo)
