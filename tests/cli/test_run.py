"""Every failure is one line on stderr: click's usage errors too, with where to look; long inputs are cut."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import GuardRepo, guard_run, only_error_line
from gitutil import Repos, run_statefile
from gitutil import git as repo_git

from statefile.cli import cli
from statefile.cli.run import invoke, shown
from statefile.errors import EXIT_ENVIRONMENT, EXIT_USAGE


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["record"], ["Missing argument 'PROGRAM'", "see 'statefile record --help'"]),
        (["recrod", "perf"], ["no command 'recrod'", "did you mean 'record'", "see 'statefile --help'"]),
        (["record", "perf", "--stauts", "x"], ["--stauts", "'--status'", "see 'statefile record --help'"]),
        (["lesson", "ad", "perf", "x"], ["'ad'", "see 'statefile lesson --help'"]),
        (["render", "perf", "--budget", "10"], ["--budget", "see 'statefile render --help'"]),
    ],
)
def test_usage_errors_are_one_line_saying_where_to_look(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    needles: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke(cli, args) == EXIT_USAGE
    out, err = capfd.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("statefile: error: "), err
    for needle in needles:
        assert needle in err


def test_a_huge_input_is_cut_in_the_message(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    name = "a" * 100_000
    code = invoke(cli, ["--dir", str(tmp_path), "show", name])
    _, err = capfd.readouterr()
    assert code != 0 and len(err.splitlines()) == 1
    # Cut either by the message itself (names.py says "… (100000 characters)") or by shown() ("[… more]").
    assert len(err) < 600 and ("more]" in err or "(100000 characters)" in err), err


def test_shown_cuts_only_long_words_and_keeps_the_advice() -> None:
    message = f"no program '{'x' * 5000}'; 'statefile list' shows the programs"
    assert shown(message).endswith("'statefile list' shows the programs")
    assert shown("short words stay as they are") == "short words stay as they are"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["log", "perf", "-n", "abc"], "'--limit' / '-n'"),
        (["history", "perf", "-n", "1.5"], "'--last' / '-n'"),
        (["search", "x", "-n", "ten"], "'--limit' / '-n'"),
        (["expand", "perf", "x7"], "'ITERATION'"),
        (["record", "perf", "--status", "accepted", "--iteration", "9" * 5000], "'--iteration'"),
    ],
)
def test_a_number_that_is_not_one_is_said_in_words(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], option: str
) -> None:
    """As seen: `log perf -n abc` said click's "'abc' is not a valid integer range"."""
    monkeypatch.chdir(tmp_path)
    assert invoke(cli, args) == EXIT_USAGE
    _, err = capfd.readouterr()
    assert len(err.splitlines()) == 1 and option in err and "give one such as" in err, err
    # A long run of digits is a number: it is called too long, not "not a whole number".
    assert ("digits, far beyond any count" if "9" * 200 in " ".join(args) else "is not a whole number") in err, err
    assert "integer range" not in err and len(err) < 300


@pytest.mark.parametrize("command", [["log", "perf"], ["show", "perf"], ["expand", "perf", "1"]])
def test_a_program_name_cut_short_gets_a_did_you_mean(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """As seen: `log perf` beside perf-comparison said only "no program 'perf'"."""
    (tmp_path / "perf-comparison.md").write_text("# Autoloop: perf-comparison\n")
    (tmp_path / "latency.md").write_text("# Autoloop: latency\n")
    assert invoke(cli, ["--dir", str(tmp_path), *command]) == 3
    _, err = capfd.readouterr()
    assert len(err.splitlines()) == 1 and "no program 'perf' (did you mean 'perf-comparison'?)" in err, err


LONGEST_LINE = 1000  # what tests/hostile calls an overlong line


def test_a_long_query_or_path_is_cut_in_what_is_printed(unreadable_folder: Path) -> None:
    """A pasted 100 KB query came back in full in "no matches for …"; a 100 KB path twice in check's report."""
    for name in ("linked.md", "piped.md"):
        (unreadable_folder / name).unlink(missing_ok=True)
    found = run_statefile("--dir", str(unreadable_folder), "search", "q" * 100_000, cwd=unreadable_folder.parent)
    assert found.returncode == 0 and "no matches for" in found.stdout
    path = "c" * 100_000 + ".md"
    checked = run_statefile("check", path, cwd=unreadable_folder.parent)
    assert checked.returncode == 1 and "cannot read" in checked.stdout
    for proc in (found, checked):
        lines = (proc.stdout + proc.stderr).splitlines()
        assert lines and max(len(line) for line in lines) < LONGEST_LINE, [len(line) for line in lines]


@pytest.mark.parametrize(
    ("error", "code", "needle"),
    [
        (PermissionError(errno.EACCES, "Permission denied", "/locked/autoloop.json"), 8, "make it readable"),
    ],
)
def test_a_path_the_system_will_not_look_at_is_one_line_not_exit_70(
    error: OSError, code: int, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report --out` under a folder this user may not enter was exit 70 (PermissionError from Path.exists)."""

    @click.command()
    def looks() -> None:
        raise error

    assert invoke(looks, []) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "internal error" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["show", "perf", "--json", "--remote", "origin"],
        ["status", "perf", "--json", "--remote", "origin"],
        ["list", "--json", "--remote", "origin"],
        ["config", "--json"],
    ],
)
def test_global_options_work_after_the_command(
    guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """Guard rail (issue 13): global options work after the command; the memory is left exactly as it was."""
    result = guard_run(capsys, *args)
    assert result.code == 0, result.err
    json.loads(result.out)


LONG_NAME = "b" * 300


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["list"], ["--json", "show", "perf"], ["export"]])
def test_output_into_a_full_device_is_an_environment_error(initialized_repos: Repos, args: list[str]) -> None:
    """Found by the hostile run (issue 15): output into a full device is an environment error."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [str(Path(sys.executable).with_name("statefile")), *args],
            cwd=initialized_repos.work,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == EXIT_ENVIRONMENT
    assert "No space left on device" in only_error_line(proc)


def test_a_group_without_its_command_shows_its_help(initialized_repos: Repos) -> None:
    """Found by the hostile run (issue 15): a group without its command shows its help."""
    proc = run_statefile("lesson", cwd=initialized_repos.work)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("Usage: statefile lesson") and "promote" in proc.stdout


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--dir", LONG_NAME, "list"], {}),
        (["--repo", LONG_NAME, "list"], {}),
        (["list"], {"STATEFILE_DIR": LONG_NAME}),
        (["--dir", "b/" * 3000, "list"], {}),
        (["record", "perf", "--status", "rejected", "--autoloop-json", LONG_NAME], {}),
        (["compact", LONG_NAME + ".md"], {}),
        (["report", "--out", LONG_NAME], {}),
    ],
    ids=["dir", "repo", "env-dir", "path-max", "autoloop-json", "compact-file", "report-out"],
)
def test_a_path_longer_than_the_file_system_holds_is_one_short_line(
    initialized_repos: Repos, args: list[str], env: dict[str, str]
) -> None:
    """pathlib's is_dir/exists raise ENAMETOOLONG instead of answering: OSError, exit 70, the path in full."""
    before = repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work)
    proc = run_statefile(*args, cwd=initialized_repos.work, env=env)
    assert proc.returncode == EXIT_USAGE and "File name too long" in only_error_line(proc)
    assert len(proc.stderr) < 400, proc.stderr  # the path is cut short, the advice still seen
    assert repo_git("rev-parse", "memory/autoloop", cwd=initialized_repos.work) == before


@pytest.mark.parametrize("code", [errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR])
def test_a_path_error_anywhere_is_a_usage_error_naming_the_path(code: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever option the path came from: invoke() says which path, cut short, exit 2 (it was exit 70)."""

    @click.command()
    def probe() -> None:
        raise OSError(code, os.strerror(code), "/tmp/" + "x" * 5000)

    assert invoke(probe, []) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and os.strerror(code) in err and "internal error" not in err and len(err) < 400


def test_a_ctrl_c_python_cannot_raise_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 CI: a Ctrl-C landing in a callback while a module loads (importlib's module-lock weakref) cannot be
    raised; Python drops it and printed "Exception ignored … Traceback".  The console says so in one line."""
    from statefile.cli import main
    from statefile.cli.run import lost_interrupt

    code = (
        "import sys, weakref\n"
        "from statefile.cli.run import lost_interrupt\n"
        "sys.unraisablehook = lost_interrupt\n"
        "class Lock: pass\n"
        "def interrupted(ref): raise KeyboardInterrupt\n"
        "lock = Lock(); ref = weakref.ref(lock, interrupted); del lock\n"
        "print('went on')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "went on\n"), done.stderr
    assert done.stderr == "statefile: note: a Ctrl-C came where Python could not stop the command; it went on\n"
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert sys.unraisablehook is lost_interrupt  # the console entry point installs it
