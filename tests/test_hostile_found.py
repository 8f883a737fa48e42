"""What the hostile run (tests/hostile) found, each built as it was found and fixed at its root.

- Files a user or a tool names (config files, workflows, autoloop.json, agent output, an edited file, an export)
  were opened blindly: a FIFO hung the command, a link to /dev/zero exhausted memory (exit 70).  They are now read
  only if they are regular files, up to a limit (statefile.store.atomic.read_regular_file).
- Files named as ``--out`` were replaced atomically whatever they were: as root, ``export --out /dev/full`` replaced
  the device with a regular file; ``summary --out FIFO`` waited forever for a reader; a full disk was exit 70.
- Output into a full device (``statefile list > /dev/full``) was exit 70; ``statefile lesson`` printed its whole
  help as one 1,758-character error line.
- A password with a '/' leaked when git's message was cut to its first 400 characters before it was redacted (the
  cut fell inside the URL, where no pattern recognised it); a password in git's scp-like form was never redacted.
- A missing object under a write made the tree writer fail with "flush of closed file" (exit 70).
- ``compact --all`` in a read-only folder said so once per program; a folder where the lock file goes was exit 3.
- A cold tester: ``--max-bytes`` of 309 nines overflowed a float (exit 70); a ``--dir``/``--repo`` (or any path)
  longer than the file system holds was exit 70, and so was importing a 303-character file name into a folder;
  ``import`` accepted ``PERF.md`` beside ``perf.md`` (``Archive/`` beside ``archive/``) and ``check`` passed them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import pinned_identity
from gitutil import Repos, copy_repos, git, make_repos, run_statefile

from statefile.cli.run import invoke
from statefile.errors import EXIT_ENVIRONMENT, EXIT_GIT, EXIT_INVALID_DATA, EXIT_USAGE
from statefile.redaction import redact

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and devices are POSIX")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("template"))
        assert run_statefile("-q", "init", "perf", cwd=repos.work).returncode == 0
    return repos


@pytest.fixture
def repos(template: Repos, tmp_path: Path) -> Repos:
    return copy_repos(template, tmp_path)


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    return proc.stderr


def sf(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """statefile, failed by the timeout if it hangs (the old behaviour on a FIFO)."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("statefile")), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# -- files statefile is told to read ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".statefile.toml", "pyproject.toml"])
def test_a_fifo_as_a_config_file_is_an_error_not_a_hang(repos: Repos, name: str) -> None:
    os.mkfifo(repos.work / name)
    proc = sf("list", cwd=repos.work)
    assert proc.returncode == EXIT_USAGE
    assert "is a FIFO, not a regular file" in one_line(proc) and name in proc.stderr


def test_a_fifo_as_the_workflow_is_an_error_not_a_hang(repos: Repos) -> None:
    workflows = repos.work / ".github" / "workflows"
    workflows.mkdir(parents=True)
    os.mkfifo(workflows / "autoloop.md")
    proc = sf("--repo-memory", "config", cwd=repos.work)
    assert proc.returncode == EXIT_USAGE and "FIFO" in one_line(proc)


@pytest.mark.parametrize(
    "args",
    [
        ["record", "perf", "--status", "accepted", "--autoloop-json", "{input}"],
        ["prepare", "--autoloop-json", "{input}", "--out", "{out}"],
        ["apply", "--agent-output", "{input}"],
    ],
    ids=["record", "prepare", "apply"],
)
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_inputs_that_never_end_are_refused_unread(repos: Repos, tmp_path: Path, args: list[str], kind: str) -> None:
    source = tmp_path / "input.json"
    if kind == "fifo":
        os.mkfifo(source)
    else:
        source.symlink_to("/dev/zero")  # would be read until memory runs out
    filled = [a.format(input=source, out=tmp_path / "out") for a in args]
    proc = sf(*filled, cwd=repos.work)
    assert proc.returncode != 0
    line = one_line(proc)
    assert str(source) in line and ("FIFO" in line or "character device" in line), line


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import os, sys; os.remove(sys.argv[1]); os.mkfifo(sys.argv[1])", "is a FIFO"),
        ("import os, sys; os.remove(sys.argv[1]); os.symlink('/dev/zero', sys.argv[1])", "character device"),
        ("import sys; open(sys.argv[1], 'ab').write(b'x' * 9_000_000)", "more than the"),
    ],
    ids=["fifo", "dev-zero", "huge"],
)
def test_an_editor_that_leaves_no_regular_file_saves_nothing(repos: Repos, code: str, needle: str) -> None:
    before = git("rev-parse", "memory/autoloop", cwd=repos.work)
    editor = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    proc = sf("edit", "perf", cwd=repos.work, env={"EDITOR": editor})
    assert proc.returncode == EXIT_USAGE
    line = one_line(proc)
    assert needle in line and "nothing was saved" in line, line
    assert git("rev-parse", "memory/autoloop", cwd=repos.work) == before


# -- files statefile is told to write ---------------------------------------------------------------------------


def test_an_output_that_is_a_device_is_written_into_never_replaced(repos: Repos, tmp_path: Path) -> None:
    """`export --out` to a link to /dev/null: the data goes to the device; the link (and the device) stay."""
    link = tmp_path / "sink"
    link.symlink_to(os.devnull)
    for args in (["export", "--out", str(link)], ["summary", "--out", str(link)]):
        proc = sf(*args, cwd=repos.work)
        assert proc.returncode == 0, proc.stderr
        assert link.is_symlink() and os.readlink(link) == os.devnull
    assert Path(os.devnull).is_char_device()


def test_an_output_through_a_link_to_a_file_replaces_the_file_and_keeps_the_link(repos: Repos, tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert sf("export", "--out", str(link), cwd=repos.work).returncode == 0
    assert link.is_symlink() and json.loads(target.read_text())["files"]["perf.md"]


def test_an_output_fifo_nobody_reads_is_an_error_not_a_hang(repos: Repos, tmp_path: Path) -> None:
    pipe = tmp_path / "summary.pipe"
    os.mkfifo(pipe)
    proc = sf("summary", "--out", str(pipe), cwd=repos.work)
    assert proc.returncode == EXIT_USAGE and "FIFO nobody is reading" in one_line(proc)


def test_an_output_fifo_someone_reads_gets_the_output(repos: Repos, tmp_path: Path) -> None:
    pipe = tmp_path / "summary.pipe"
    os.mkfifo(pipe)
    reader = subprocess.Popen(["cat", str(pipe)], stdout=subprocess.PIPE, text=True)
    proc = sf("summary", "--out", str(pipe), cwd=repos.work)
    out, _ = reader.communicate(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "perf" in out


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["list"], ["--json", "show", "perf"], ["export"]])
def test_output_into_a_full_device_is_an_environment_error(repos: Repos, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [str(Path(sys.executable).with_name("statefile")), *args],
            cwd=repos.work,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == EXIT_ENVIRONMENT
    assert "No space left on device" in one_line(proc)


def test_a_group_without_its_command_shows_its_help(repos: Repos) -> None:
    proc = sf("lesson", cwd=repos.work)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("Usage: statefile lesson") and "promote" in proc.stdout


def test_a_folder_where_the_lock_file_goes_fails_once(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    for name in ("perf", "other"):
        assert sf("--dir", str(folder), "-q", "init", name, cwd=tmp_path).returncode == 0
    (folder / ".statefile.lock").unlink(missing_ok=True)
    (folder / ".statefile.lock").mkdir()
    proc = sf("--dir", str(folder), "compact", "--all", "--aggressive", cwd=tmp_path)
    assert proc.returncode == EXIT_ENVIRONMENT
    assert "lock file" in one_line(proc)


# -- secrets ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("tok:ScpSecret3w@127.0.0.1:o/r.git", "ScpSecret3w"),
        ("invalid remote name 'me:pa/ss@host.example.com:o/r.git'", "pa/ss"),
    ],
)
def test_a_password_in_gits_scp_form_is_hidden(text: str, secret: str) -> None:
    assert secret not in redact(text) and "***" in redact(text)


def test_the_scp_form_without_a_password_is_left_alone() -> None:
    assert redact("git@github.com:o/r.git") == "git@github.com:o/r.git"


def test_a_password_with_a_slash_is_redacted_before_gits_message_is_cut(repos: Repos) -> None:
    """GIT_TRACE=1 fills git's stderr with trace lines quoting the URL; the message used to be cut inside the URL."""
    url = "https://user:LeftHalf9x/RightHalf9y@127.0.0.1:1/o/r.git"
    proc = sf("list", cwd=repos.work, env={"STATEFILE_REMOTE": url, "GIT_TRACE": "1"})
    assert proc.returncode == EXIT_GIT
    line = one_line(proc)
    assert "LeftHalf9x" not in line and "RightHalf9y" not in line
    assert "trace:" not in line  # git's trace lines are not the message


# -- a missing object under a write ----------------------------------------------------------------------------------


def test_a_write_over_a_missing_object_is_invalid_data_not_exit_70(repos: Repos) -> None:
    # The branch's tree names a blob the repository does not have (a damaged or partial clone): the same error, with
    # its path, as every read of a missing object (it was git's "mktree failed", exit 6).
    listing = f"100644 blob {'2' * 40}\tperf.md\n"
    made = subprocess.run(["git", "mktree", "--missing"], cwd=repos.work, input=listing, capture_output=True, text=True)
    commit = git("commit-tree", made.stdout.strip(), "-m", "damaged", cwd=repos.work).strip()
    git("update-ref", "refs/heads/memory/autoloop", commit, cwd=repos.work)
    proc = sf("init", "newprog", cwd=repos.work)
    assert proc.returncode == EXIT_INVALID_DATA, proc.stderr
    assert "perf.md (object 2222" in one_line(proc) and "missing from the repository" in proc.stderr
    assert git("rev-parse", "refs/heads/memory/autoloop", cwd=repos.work).strip() == commit


# -- the second full run -------------------------------------------------------------------------------------------


def _headings(count: int) -> str:
    """A state file whose history is ``count`` one-line iteration headings: small in bytes, huge in lines."""
    lines = "\n".join(f"### Iteration {n}" for n in range(count, 0, -1))
    table = f"| Field | Value |\n|---|---|\n| Iteration Count | {count} |"
    return f"# perf\n\n## ⚙️ Machine State\n\n{table}\n\n## 📊 Iteration History\n\n{lines}\n"


def test_a_file_of_more_lines_than_statefile_reads_is_refused_unparsed(tmp_path: Path) -> None:
    """280,000 iteration headings fit in 7 MB (under the byte limit) and took minutes to parse and fold."""
    from statefile.store.files import line_limit

    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "perf.md").write_text(_headings(line_limit(30720) + 10))
    before = (folder / "perf.md").read_bytes()
    for args in (["show", "perf"], ["record", "perf", "--status", "accepted"], ["compact", "perf"], ["check"]):
        proc = sf("--dir", str(folder), *args, cwd=tmp_path)
        assert proc.returncode in (1, 7), (args, proc.stderr)
        assert "lines, more than statefile will read" in proc.stdout + proc.stderr, args
    assert (folder / "perf.md").read_bytes() == before


def test_a_file_within_its_budget_is_always_within_the_line_limit() -> None:
    from statefile.store.files import MIN_LINE_LIMIT, line_limit

    for budget in (200, 30720, 1 << 20):
        assert line_limit(budget) >= max(budget, MIN_LINE_LIMIT)  # one byte per line at most


def test_a_branch_file_of_too_many_lines_is_refused(repos: Repos) -> None:
    from statefile.store.files import line_limit

    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repos.work,
        input=_headings(line_limit(30720) + 1),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tree = subprocess.run(
        ["git", "mktree"], cwd=repos.work, input=f"100644 blob {blob}\tperf.md\n", capture_output=True, text=True
    ).stdout.strip()
    commit = git("commit-tree", tree, "-m", "huge", cwd=repos.work).strip()
    git("update-ref", "refs/heads/memory/autoloop", commit, cwd=repos.work)
    proc = sf("record", "perf", "--status", "accepted", cwd=repos.work)
    assert proc.returncode == 7 and "lines, more than statefile will read" in one_line(proc)
    assert git("rev-parse", "memory/autoloop", cwd=repos.work).strip() == commit


def test_an_entry_longer_than_many_parts_is_archived_whole_and_fast() -> None:
    """A 5 MB one-line entry was cut into parts by scanning the whole rest of the text once per part (quadratic)."""
    from statefile.model.archive import _take

    text = "### Iteration 9 — " + "é" * 200_000 + "y" * 300_000 + "\nnext line\n"
    pieces = []
    rest = text
    while rest:
        head, rest = _take(rest, 30720)
        assert 0 < len(head.encode()) <= 30720
        pieces.append(head)
    assert "".join(pieces) == text
    assert all(not p.endswith("\udcc3") for p in pieces)  # never a character split between parts


def test_a_misquoted_or_missing_editor_is_a_usage_error_not_a_hang(repos: Repos) -> None:
    """With no $EDITOR and no terminal, click started vim, which waited for keys forever; a stray quote was exit 70."""
    before = git("rev-parse", "memory/autoloop", cwd=repos.work)
    for value, needle in (("", "no editor to run"), ('"unbalanced', "fix its quoting")):
        env = {"EDITOR": value, "VISUAL": ""}
        proc = subprocess.run(
            [str(Path(sys.executable).with_name("statefile")), "edit", "perf"],
            cwd=repos.work,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == EXIT_USAGE and needle in one_line(proc)
    assert git("rev-parse", "memory/autoloop", cwd=repos.work) == before


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"selected": "perf", "state_file_max_bytes": ' + "9" * 5000 + "}", "5,000 digits"),
        ('{"selected": "perf", "x": 1e999}', "out of range"),
    ],
    ids=["5000-digit-number", "infinite-float"],
)
def test_numbers_json_cannot_hold_are_a_usage_error(repos: Repos, tmp_path: Path, text: str, needle: str) -> None:
    source = tmp_path / "autoloop.json"
    source.write_text(text)
    for args in (
        ["prepare", "--autoloop-json", str(source), "--out", str(tmp_path / "out")],
        ["report", "--out", str(source)],
    ):
        proc = sf(*args, cwd=repos.work)
        assert proc.returncode == EXIT_USAGE and needle in one_line(proc), proc.stderr
    assert source.read_text() == text


def test_a_nan_target_in_autoloop_json_is_no_target(repos: Repos, tmp_path: Path) -> None:
    """Python's json.dumps writes NaN; the target was then formatted as a Decimal NaN (exit 70)."""
    source = tmp_path / "autoloop.json"
    source.write_text('{"selected": "perf", "selected_target_metric": NaN}')
    out = tmp_path / "out"
    proc = sf("prepare", "--autoloop-json", str(source), "--out", str(out), "--context-out", str(tmp_path / "ctx"),
              cwd=repos.work)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    context = json.loads((tmp_path / "ctx" / "context.json").read_text())
    assert context["target_metric"] is None


def test_an_agent_output_with_hundreds_of_items_writes_nothing(repos: Repos, tmp_path: Path) -> None:
    from statefile.app.ghaw import MAX_ITEMS

    item = {"type": "record_iteration", "program": "perf", "status": "accepted"}
    source = tmp_path / "output.json"
    source.write_text(json.dumps({"items": [{**item, "metric": i} for i in range(MAX_ITEMS + 1)]}))
    before = git("rev-parse", "memory/autoloop", cwd=repos.work)
    for flag in ("--any-program", None):  # too many for a maintainer's by-hand apply; no context at all
        proc = sf("apply", "--agent-output", str(source), *([flag] if flag else []), cwd=repos.work)
        assert proc.returncode == EXIT_USAGE and "nothing was written" in one_line(proc)
    assert git("rev-parse", "memory/autoloop", cwd=repos.work) == before


def test_an_item_error_naming_a_huge_program_stays_short(repos: Repos, tmp_path: Path) -> None:
    source = tmp_path / "output.json"
    source.write_text(json.dumps({"items": [{"type": "record_iteration", "program": "p" * 100_000, "status": "x"}]}))
    proc = sf("apply", "--agent-output", str(source), "--any-program", cwd=repos.work)
    assert proc.returncode == EXIT_USAGE and len(one_line(proc)) < 1000


def test_a_billion_laughs_workflow_is_an_error_not_a_hang(repos: Repos) -> None:
    """The error message printed the entry with repr(): nine levels of nine aliases is 9**9 strings."""
    laughs = "\n".join(
        [f"a0: &a0 [{', '.join(['lol'] * 9)}]"]
        + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    )
    workflows = repos.work / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "autoloop.md").write_text(f"---\n{laughs}\ntools:\n  repo-memory: *a9\n---\nbody\n")
    proc = sf("--repo-memory", "list", cwd=repos.work)
    assert proc.returncode == EXIT_USAGE and "must be mappings, got a sequence" in one_line(proc)


def test_check_fails_on_links_at_the_shared_lessons_and_in_an_archive(repos: Repos) -> None:
    """The gate read only the programs' own files: a link as _shared.md or as an archive part passed."""
    git("fetch", "--quiet", "origin", cwd=repos.work, check=False)
    listing = git("ls-tree", "memory/autoloop", cwd=repos.work)
    link = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repos.work, input="/etc/passwd", capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "mktree"], cwd=repos.work, input=f"120000 blob {link}\t0001.md\n", capture_output=True, text=True
    ).stdout.strip()
    folder = subprocess.run(
        ["git", "mktree"], cwd=repos.work, input=f"040000 tree {archive}\tperf\n", capture_output=True, text=True
    ).stdout.strip()
    full = listing + f"120000 blob {link}\t_shared.md\n040000 tree {folder}\tarchive\n"
    tree = subprocess.run(["git", "mktree"], cwd=repos.work, input=full, capture_output=True, text=True).stdout.strip()
    commit = git("commit-tree", tree, "-p", "memory/autoloop", "-m", "links", cwd=repos.work).strip()
    git("update-ref", "refs/heads/memory/autoloop", commit, cwd=repos.work)
    proc = sf("check", cwd=repos.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "_shared.md on branch memory/autoloop is a symbolic link" in proc.stdout
    assert "archive/perf/0001.md on branch memory/autoloop is a symbolic link" in proc.stdout


# -- what a cold tester found (issue 15): sizes, path lengths, names differing only in case -------------------------


@pytest.mark.parametrize("raw", ["9" * 309, "9" * 307 + "KB"], ids=["309-digits", "307-digits-KB"])
def test_an_absurd_max_bytes_is_a_usage_error(repos: Repos, raw: str) -> None:
    """float() made 309 nines infinity: OverflowError, exit 70."""
    proc = sf("--max-bytes", raw, "list", cwd=repos.work)
    assert proc.returncode == EXIT_USAGE and "at most 1,073,741,824 bytes (1 GiB)" in one_line(proc)


LONG = "b" * 300


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--dir", LONG, "list"], {}),
        (["--repo", LONG, "list"], {}),
        (["list"], {"STATEFILE_DIR": LONG}),
        (["--dir", "b/" * 3000, "list"], {}),
        (["record", "perf", "--status", "rejected", "--autoloop-json", LONG], {}),
        (["compact", LONG + ".md"], {}),
        (["report", "--out", LONG], {}),
    ],
    ids=["dir", "repo", "env-dir", "path-max", "autoloop-json", "compact-file", "report-out"],
)
def test_a_path_longer_than_the_file_system_holds_is_one_short_line(
    repos: Repos, args: list[str], env: dict[str, str]
) -> None:
    """pathlib's is_dir/exists raise ENAMETOOLONG instead of answering: OSError, exit 70, the path in full."""
    before = git("rev-parse", "memory/autoloop", cwd=repos.work)
    proc = sf(*args, cwd=repos.work, env=env)
    assert proc.returncode == EXIT_USAGE and "File name too long" in one_line(proc)
    assert len(proc.stderr) < 400, proc.stderr  # the path is cut short, the advice still seen
    assert git("rev-parse", "memory/autoloop", cwd=repos.work) == before


@pytest.mark.parametrize("code", [errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR])
def test_a_path_error_anywhere_is_a_usage_error_naming_the_path(code: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever option the path came from: invoke() says which path, cut short, exit 2 (it was exit 70)."""

    @click.command()
    def probe() -> None:
        raise OSError(code, os.strerror(code), "/tmp/" + "x" * 5000)

    assert invoke(probe, []) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and os.strerror(code) in err and "internal error" not in err and len(err) < 400


def _export_with(repos: Repos, tmp_path: Path, extra: dict[str, str]) -> Path:
    """The branch's export with ``extra`` files added (path → text), as a file to import."""
    data = json.loads(sf("export", cwd=repos.work).stdout)
    for path, text in extra.items():
        data["files"][path] = {"text": text, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    source = tmp_path / "export.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    return source


@pytest.mark.parametrize("mode", ["branch", "dir"])
def test_import_refuses_a_name_longer_than_a_file_system_holds(repos: Repos, tmp_path: Path, mode: str) -> None:
    """Accepted on a branch (no checkout could hold it); in a folder the write crashed with ENAMETOOLONG, exit 70."""
    source = _export_with(repos, tmp_path, {"a" * 300 + ".md": "# x\n"})
    folder = tmp_path / "folder"
    folder.mkdir()
    flags = ["--dir", str(folder)] if mode == "dir" else ["--branch", "memory/restored"]
    proc = sf(*flags, "import", str(source), cwd=repos.work)
    assert proc.returncode == EXIT_USAGE and "303 bytes long, more than the 255" in one_line(proc)
    assert not list(folder.iterdir())
    assert not git("branch", "--list", "memory/restored", cwd=repos.work).strip()


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
    repos: Repos, tmp_path: Path, mode: str, extra: dict[str, str], needle: str
) -> None:
    """PERF.md beside perf.md (Archive/ beside archive/) was imported; macOS and Windows hold only one of them."""
    source = _export_with(repos, tmp_path, extra)
    folder = tmp_path / "folder"
    folder.mkdir()
    flags = []
    if mode == "dir":
        (folder / "perf.md").write_text(git("show", "memory/autoloop:perf.md", cwd=repos.work), encoding="utf-8")
        flags = ["--dir", str(folder)]
    before = git("ls-tree", "-r", "--name-only", "memory/autoloop", cwd=repos.work)
    proc = sf(*flags, "import", "--force", str(source), cwd=repos.work)
    assert proc.returncode == EXIT_USAGE and needle in one_line(proc)
    assert git("ls-tree", "-r", "--name-only", "memory/autoloop", cwd=repos.work) == before
    assert sorted(p.name for p in folder.iterdir()) == (["perf.md"] if mode == "dir" else [])


def test_check_fails_on_names_differing_only_in_case(repos: Repos, tmp_path: Path) -> None:
    """check and list showed PERF and perf side by side, exit 0, in both modes."""
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repos.work, input="x\n", capture_output=True, text=True
    ).stdout.strip()

    def tree(listing: str) -> str:
        made = subprocess.run(["git", "mktree"], cwd=repos.work, input=listing, capture_output=True, text=True)
        return made.stdout.strip()

    perf = tree(tree(f"100644 blob {blob}\t0001.md\n").join(["040000 tree ", "\tperf\n"]))
    top = git("ls-tree", "memory/autoloop", cwd=repos.work) + f"040000 tree {perf}\tArchive\n"
    top += f"040000 tree {perf}\tarchive\n" + git("ls-tree", "memory/autoloop", "perf.md", cwd=repos.work).replace(
        "\tperf.md", "\tPERF.md"
    )
    commit = git("commit-tree", tree(top), "-p", "memory/autoloop", "-m", "twins", cwd=repos.work).strip()
    git("update-ref", "refs/heads/memory/autoloop", commit, cwd=repos.work)
    proc = sf("check", cwd=repos.work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "error: perf.md and PERF.md differ only in case" in proc.stdout
    assert "error: archive/ and Archive/ differ only in case" in proc.stdout

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "perf.md").write_text(git("show", "memory/autoloop:perf.md", cwd=repos.work), encoding="utf-8")
    assert sf("--dir", str(folder), "check", cwd=tmp_path).returncode == 0
    (folder / "Perf.md").write_bytes((folder / "perf.md").read_bytes())
    proc = sf("--dir", str(folder), "check", cwd=tmp_path)
    assert proc.returncode == 1 and "error: perf.md and Perf.md differ only in case" in proc.stdout, proc.stdout
