"""Hostile input through the whole ``statefile`` command: every one is refused with one clear line, nothing leaks.

What is tried: program names that traverse paths or look like options, branch and remote names with ``..``, ``@{``,
control characters and option syntax, remote URLs carrying credentials (which must never be printed), a 100 MB
state file (refused with bounded memory), symbolic links and submodules on the branch and in a folder, and an
export whose paths climb out of the store.  The store-level checks live in test_store_safety.py; these go through
the command line, its exit codes and everything it prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import pinned_identity
from gitutil import Repos, copy_repos, git, make_repos, run_statefile
from synthetic import synthetic_state

from statefile.cli import main
from statefile.errors import EXIT_GIT, EXIT_INVALID_DATA, EXIT_USAGE
from statefile.store import Store

BRANCH = "memory/autoloop"
LOCAL = f"refs/heads/{BRANCH}"
# Raw control characters must never reach a terminal from our messages (repr() shows them escaped).
_RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def invoke(
    args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """Run ``statefile args`` in this process (fast); exit code, stdout and stderr as the terminal would see them."""
    monkeypatch.chdir(cwd)
    code = 0
    try:
        main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capfd.readouterr()
    return code, out, err


def tip(repo: Path) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", LOCAL], cwd=repo, capture_output=True, text=True)
    return proc.stdout.strip() or None


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if ".git" not in p.parts}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    with pinned_identity(tmp_path_factory):
        r = make_repos(tmp_path_factory.mktemp("template"))
        with Store.open(r.work) as store:
            store.write_files({"perf.md": synthetic_state("perf", 12, seed=2)}, "seed")
        git("push", "--quiet", "origin", BRANCH, cwd=r.work)
    return r


@pytest.fixture
def repos(template: Repos, tmp_path: Path) -> Repos:
    """A clone whose memory branch holds ``perf`` (pushed), the remote bare, the clone's branch local."""
    return copy_repos(template, tmp_path)


# -- names that become paths, options or refs --------------------------------------------------------------------

BAD_PROGRAMS = [
    "../escape",
    "..",
    "a/../../b",
    "/etc/passwd",
    "-rf",
    "--upload-pack=touch pwned",
    ".hidden",
    "two words",
    "evil\nline",
    "bell\x07\x1b[2J",
    "x" * 101,
    "perf.md",
    "trailing.",
]
# Commands that take a PROGRAM (never a file path); "{}" is the name, after "--" so option-like names stay names.
PROGRAM_COMMANDS = [
    ["init", "--", "{}"],
    ["record", "--status", "accepted", "--", "{}"],
    ["log", "--", "{}"],
    ["expand", "--", "{}", "1"],
    ["render", "--", "{}"],
    ["lesson", "add", "--", "{}", "a lesson"],
    ["status", "--", "{}"],
]


@pytest.mark.parametrize("name", BAD_PROGRAMS, ids=lambda n: repr(n)[:20])
@pytest.mark.parametrize("command", PROGRAM_COMMANDS, ids=lambda c: c[0] if c[0] != "lesson" else "lesson-add")
def test_hostile_program_names_are_refused(
    repos: Repos, name: str, command: list[str], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    before_tip, before_files = tip(repos.work), files_under(repos.root)
    args = [name if part == "{}" else part for part in command]
    code, out, err = invoke(args, repos.work, monkeypatch, capfd)
    assert code == EXIT_USAGE, (code, out, err)
    assert err.startswith("statefile: error: invalid program name") and err.count("\n") == 1, err
    assert not _RAW_CONTROL.search(err) and not _RAW_CONTROL.search(out)
    assert tip(repos.work) == before_tip and files_under(repos.root) == before_files  # nothing written anywhere


BAD_REFS = [
    "a..b",
    "x@{1}",
    "bell\x07name",
    "esc\x1b[31m",
    "tab\there",
    "-x",
    "--upload-pack=touch pwned",
    "a b",
    "/lead",
    "trail/",
    "a//b",
    "a.lock",
    "x~1",
    "x^0",
    "x:y",
    "x?",
    "x*",
    "x[0",
    "back\\slash",
    "@",
    "ends.",
    ".hidden/x",
    "refs/heads/../x",
]


@pytest.mark.parametrize("name", BAD_REFS, ids=lambda n: repr(n)[:20])
@pytest.mark.parametrize("how", ["--branch", "STATEFILE_BRANCH", "--remote"])
def test_hostile_branch_and_remote_names_never_reach_git(
    repos: Repos, name: str, how: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    if how == "STATEFILE_BRANCH":
        monkeypatch.setenv("STATEFILE_BRANCH", name)
        args = ["record", "perf", "--status", "accepted"]
    else:
        args = [f"{how}={name}", "record", "perf", "--status", "accepted"]
    before = tip(repos.work)
    code, out, err = invoke(args, repos.work, monkeypatch, capfd)
    kind = "remote" if how == "--remote" else "branch"
    assert code == EXIT_USAGE, (code, out, err)
    assert re.match(rf"statefile: error: (invalid {kind} name|.*{kind})", err) and err.count("\n") == 1, err
    assert not _RAW_CONTROL.search(err)
    assert tip(repos.work) == before and not (repos.work / "pwned").exists()
    assert repos.remote_tip() is not None and not (repos.root / "pwned").exists()


# -- credentials in remote URLs ------------------------------------------------------------------------------------

SECRET_URLS = [
    ("https://user:s3cr3t-Passw0rd@127.0.0.1:9/memory.git", "s3cr3t-Passw0rd"),
    ("https://x-access-token:ghp_0123456789abcdefghijABCDEFGHIJ012345@127.0.0.1:9/r.git", "ghp_0123456789abcdef"),
    ("http://oauth2:glpat-SECRETtokenVALUE@127.0.0.1:9/group/r.git", "glpat-SECRETtokenVALUE"),
]


@pytest.mark.parametrize(("url", "secret"), SECRET_URLS, ids=["password", "github-token", "gitlab-token"])
def test_credentials_in_remote_urls_are_never_printed(repos: Repos, url: str, secret: str) -> None:
    """Fetch through a URL with credentials fails (nothing listens on port 9): the message is redacted."""
    clone = repos.clone("creds")
    git("remote", "add", "creds", url, cwd=clone)
    # The push URL alone carries the secret: the fetch works, the push fails — the other path to an error message.
    git("remote", "add", "pushonly", str(repos.remote), cwd=clone)
    git("remote", "set-url", "--push", "pushonly", url, cwd=clone)
    env = {"STATEFILE_DEBUG": ""}
    runs = [
        (["--remote", "creds", "list"], EXIT_GIT),
        (["--remote", "creds", "--json", "report", "--all"], EXIT_GIT),
        (["--remote", "creds", "record", "perf", "--status", "accepted"], EXIT_GIT),
        (["--remote", "pushonly", "record", "perf", "--status", "accepted", "--metric", "1"], EXIT_GIT),
        (["--remote", "creds", "config"], 0),
    ]
    for args, code in runs:
        proc = run_statefile(*args, cwd=clone, env=env)
        everything = proc.stdout + proc.stderr
        assert secret not in everything, (args, everything)
        assert proc.returncode == code, (args, proc.returncode, proc.stderr)
        if code:
            assert proc.stderr.startswith("statefile: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert repos.remote_file("perf.md") == Store.open(repos.work).read_text("perf")  # the failed push changed nothing


# -- symbolic links and submodules -------------------------------------------------------------------------------


def _blob(repo: Path, data: bytes) -> str:
    return (
        subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )


def _point_branch(repo: Path, entries: list[str]) -> str:
    tree = subprocess.run(
        ["git", "mktree", "--missing"], cwd=repo, input="".join(e + "\n" for e in entries).encode(),
        capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    commit = git("commit-tree", tree, "-m", "crafted", cwd=repo).strip()
    git("update-ref", LOCAL, commit, cwd=repo)
    return commit


def test_symlinks_and_submodules_on_the_branch_are_refused_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    r = make_repos(tmp_path)
    head = git("rev-parse", "HEAD", cwd=r.work).strip()
    real = synthetic_state("real", 3, seed=1)
    crafted = _point_branch(
        r.work,
        [
            f"120000 blob {_blob(r.work, b'/etc/passwd')}\tperf.md",
            f"160000 commit {head}\tlib.md",
            f"100644 blob {_blob(r.work, real.encode())}\treal.md",
            f"040000 tree {_archive_symlink_tree(r.work)}\tarchive",
        ],
    )
    refused = [
        (["show", "perf"], "symbolic link"),
        (["record", "perf", "--status", "accepted"], "symbolic link"),
        (["render", "perf"], "symbolic link"),
        (["show", "lib"], "submodule"),
        (["record", "lib", "--status", "accepted"], "submodule"),
        (["expand", "real", "99"], "symbolic link"),  # not in the file: the archive (a link) is next
        (["export"], "symbolic link"),
        (["search", "root"], "symbolic link"),
    ]
    for args, why in refused:
        code, out, err = invoke(args, r.work, monkeypatch, capfd)
        assert code == EXIT_INVALID_DATA, (args, code, err)
        assert why in err and err.count("\n") == 1, (args, err)
        assert "root:" not in out
    # Listed, but as what they are: not programs to read, errors to fix (never silently left out).
    code, out, _ = invoke(["--json", "list"], r.work, monkeypatch, capfd)
    rows = {row["program"]: row for row in json.loads(out)}
    assert code == 0 and list(rows) == ["lib", "perf", "real"] and rows["real"]["status"] != "unreadable"
    assert rows["perf"]["status"] == rows["lib"]["status"] == "unreadable"
    assert "symbolic link" in rows["perf"]["error"] and "submodule" in rows["lib"]["error"]
    code, out, _ = invoke(["report", "--all"], r.work, monkeypatch, capfd)
    programs = json.loads(out)["statefile"]["programs"]
    assert code == 0 and list(programs) == ["lib", "perf", "real"] and "error" not in programs["real"]
    assert "symbolic link" in programs["perf"]["error"]
    assert tip(r.work) == crafted
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=r.work, capture_output=True, text=True)
    assert "error" not in fsck.stderr.lower() or "broken link" in fsck.stderr  # our crafted gitlink only


def _archive_symlink_tree(repo: Path) -> str:
    """A tree ``archive/`` whose ``real`` entry is a symbolic link to /tmp."""
    entry = f"120000 blob {_blob(repo, b'/tmp')}\treal\n"
    return (
        subprocess.run(["git", "mktree"], cwd=repo, input=entry.encode(), capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )


def test_symlinks_in_a_folder_store_are_never_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text(synthetic_state("perf", 2).replace("Autoloop", "TOPSECRET"))
    (folder / "perf.md").symlink_to(outside)
    (tmp_path / "elsewhere").mkdir()
    (folder / "archive").symlink_to(tmp_path / "elsewhere")
    (folder / "ok.md").write_text(synthetic_state("ok", 30))  # recording folds old entries into archive/
    before = outside.read_bytes()
    for args in (
        ["--dir", str(folder), "show", "perf"],
        ["--dir", str(folder), "record", "perf", "--status", "accepted"],
        ["--dir", str(folder), "record", "ok", "--status", "accepted"],  # compaction must write archive/ok/: a link
        ["--dir", str(folder), "export"],
    ):
        code, out, err = invoke(args, tmp_path, monkeypatch, capfd)
        assert code == EXIT_INVALID_DATA, (args, code, err)
        assert "symbolic link" in err and "TOPSECRET" not in out + err
    code, out, _ = invoke(["--dir", str(folder), "--json", "list"], tmp_path, monkeypatch, capfd)
    rows = {row["program"]: row for row in json.loads(out)}
    assert code == 0 and list(rows) == ["ok", "perf"] and rows["perf"]["status"] == "unreadable"
    assert "symbolic link" in rows["perf"]["error"] and "TOPSECRET" not in out
    assert outside.read_bytes() == before and list((tmp_path / "elsewhere").iterdir()) == []


# -- an export whose paths climb out ------------------------------------------------------------------------------

TRAVERSAL_PATHS = [
    "../../evil.md",
    "/abs/evil.md",
    ".git/config",
    "archive/../../evil.md",
    "a\\..\\evil.md",
    "ok\x1b.md",
]


@pytest.mark.parametrize("path", TRAVERSAL_PATHS, ids=lambda p: repr(p)[:20])
def test_import_refuses_paths_outside_the_store(
    tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "deep" / "memory"
    folder.mkdir(parents=True)
    data = b"# Autoloop: evil\n"
    export = {
        "format": "statefile-export",
        "version": 1,
        "files": {path: {"text": data.decode(), "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}},
    }
    source = tmp_path / "export.json"
    source.write_text(json.dumps(export))
    code, _, err = invoke(["--dir", str(folder), "import", str(source)], tmp_path, monkeypatch, capfd)
    assert code == EXIT_USAGE and err.count("\n") == 1 and not _RAW_CONTROL.search(err), (code, err)
    assert {p.name for p in tmp_path.rglob("*")} == {"deep", "memory", "export.json"}


# -- a 100 MB state file ------------------------------------------------------------------------------------------

# Runs statefile in-process and reports this process's peak RSS (git children excluded) on its last stderr line.
_RSS_PROBE = """
import resource, sys
from statefile.cli import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:  # VmHWM starts afresh at exec; ru_maxrss would include the parent's pages at fork time
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
sys.stderr.write(f"\\nmaxrss_kb={peak}\\n")
sys.exit(code)
"""
HUGE = 100 * 1024 * 1024
RSS_LIMIT_KB = 150 * 1024  # a process that read the file would hold it twice (bytes and str): over 200 MB


def huge_text() -> bytes:
    """~100 MB that starts like a real state file and goes on with iteration entries."""
    head = synthetic_state("huge", 20, seed=3).encode()
    entry = b"### Iteration 7 - padding\n\n- **Status**: rejected\n- **Notes**: " + b"x" * 400 + b"\n\n"
    return head + entry * ((HUGE - len(head)) // len(entry) + 1)


def probe(args: list[str], cwd: Path) -> tuple[int, str, int]:
    """Exit code, everything printed and peak RSS in KB of ``statefile args`` run in its own process."""
    env = {k: v for k, v in os.environ.items() if k != "STATEFILE_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    rss = int(lines[-1].split("=")[1])
    return proc.returncode, proc.stdout + "\n".join(lines[:-1]), rss


@pytest.fixture(scope="module")
def huge_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose memory branch holds ``huge.md`` (100 MB) next to a normal ``perf.md``; a folder too."""
    root = tmp_path_factory.mktemp("huge")
    _write_huge(root)  # in a function of its own, so the 100 MB are freed before the tests fork processes
    return root


def _write_huge(root: Path) -> None:
    data = huge_text()
    (root / "folder").mkdir()
    (root / "folder" / "huge.md").write_bytes(data)
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    perf = synthetic_state("perf", 5).encode()
    stream = b"".join(
        [
            b"commit refs/heads/memory/autoloop\ncommitter t <t@example.invalid> 1700000000 +0000\ndata 4\nhuge\n",
            b"M 100644 inline huge.md\ndata %d\n" % len(data),
            data,
            b"\nM 100644 inline perf.md\ndata %d\n" % len(perf),
            perf,
            b"\n",
        ]
    )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=stream, check=True, capture_output=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["show", "huge"],
        ["record", "huge", "--status", "accepted"],
        ["compact", "huge"],
        ["report", "--all"],
        ["export"],
        ["--dir", "{folder}", "show", "huge"],
        ["--dir", "{folder}", "record", "huge", "--status", "accepted"],
        ["check", "{folder}/huge.md"],
    ],
    ids=lambda a: " ".join(a).replace("{folder}", "DIR")[:40],
)
def test_a_100_mb_state_file_is_refused_with_bounded_memory(huge_repo: Path, args: list[str]) -> None:
    folder = str(huge_repo / "folder")
    code, printed, rss_kb = probe([a.replace("{folder}", folder) for a in args], huge_repo / "repo")
    # check reports the file as FAIL (exit 1), report --all as that program's error (the others stay usable);
    # everything else stops with one error line.
    expected = {"check": 1, "report": 0}.get(args[0], EXIT_INVALID_DATA)
    assert code == expected, (code, printed)
    assert re.search(r"huge\.md.* is 10\d,\d{3},\d{3} bytes", printed), printed
    assert rss_kb < RSS_LIMIT_KB, f"statefile used {rss_kb // 1024} MB"
    assert (huge_repo / "folder" / "huge.md").stat().st_size > HUGE  # never rewritten


@pytest.mark.slow
def test_other_programs_stay_usable_beside_a_100_mb_file(huge_repo: Path) -> None:
    code, printed, _ = probe(["record", "perf", "--status", "accepted", "--metric", "1"], huge_repo / "repo")
    assert code == 0, printed
    code, printed, rss_kb = probe(["check", "perf"], huge_repo / "repo")
    assert code == 0 and rss_kb < RSS_LIMIT_KB, printed
