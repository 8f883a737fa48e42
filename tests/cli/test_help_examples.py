"""Every example a command's ``--help`` shows runs, as printed, against a prepared repository and exits 0.

The examples are read from the help text itself (the "Example:"/"Examples:" block of every command and
subcommand), so an example added, changed or broken later is caught here.  Each runs on a fresh copy of one
prepared repository: a bare remote ``origin`` and a clone whose memory branch holds ``perf`` (60 iterations,
compacted, a removed lesson to restore), with ``memory/perf.md`` in the work tree, an export ``memory.json``, the
scheduler's ``autoloop.json``, an agent output and a repo-memory folder.  Paths under ``/tmp/gh-aw/`` are mapped
into the copy, the GitHub variables a gh-aw job has point at the copy's bare remote; ``EDITOR`` is replaced by
a command that changes nothing (no one is there to type).
"""

from __future__ import annotations

import glob
import inspect
import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import pinned_identity
from gitutil import git, make_repos
from synthetic import synthetic_state

from statefile.app.ghaw import PREPARE_DIR
from statefile.cli import COMMANDS, cli
from statefile.cli.run import invoke
from statefile.store import Store

_BLOCK = re.compile(r"^\s*Examples?:\s*$")


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(cli, info_name="statefile")
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        assert command is not None
        yield [name], command
        if isinstance(command, click.Group):
            for sub in sorted(command.commands):
                yield [name, sub], command.commands[sub]


def _help(path: list[str], command: click.Command) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


def examples() -> list[tuple[str, str]]:
    """``(command path, example line)`` for every example in every help text."""
    found: list[tuple[str, str]] = []
    for path, command in _commands():
        lines = _help(path, command).splitlines()
        for index, line in enumerate(lines):
            if not _BLOCK.match(line):
                continue
            for example in lines[index + 1 :]:
                if not example.strip():
                    break
                found.append((" ".join(path), example.strip()))
    return found


EXAMPLES = examples()


def test_every_command_shows_an_example() -> None:
    shown = {path for path, _ in EXAMPLES}
    for path, _ in _commands():
        assert " ".join(path) in shown, f"statefile {' '.join(path)} --help shows no example"
    assert len(EXAMPLES) >= 30


def test_help_texts_have_no_runs_of_spaces_in_prose() -> None:
    for path, command in _commands():
        for line in _help(path, command).splitlines():
            if line.startswith(("Options:", "Commands:")):
                break  # the option and command columns are laid out by click
            text = line.strip()
            if text.startswith(("statefile", "EDITOR", "Usage:")) or not text:
                continue
            assert "  " not in text.replace(".  ", ". "), (path, line)


def test_gh_aw_examples_need_no_stored_credentials() -> None:
    """An example for a gh-aw run (its /tmp/gh-aw paths or GH_AW_ variables) must work there: the checkout keeps no
    credentials and the agent has none, so such an example reads a folder or a URL remote, never ``--remote origin``
    (workflows/README.md, "What does not work under gh-aw")."""
    for path, example in EXAMPLES:
        if "/tmp/gh-aw" in example or "GH_AW_" in example:
            assert "--remote origin" not in example, (path, example)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("examples")
    cwd = Path.cwd()
    with pinned_identity(tmp_path_factory):
        try:
            repos = make_repos(root)
            git("remote", "set-url", "origin", "../remote.git", cwd=repos.work)
            with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
                store.write_files({"perf.md": synthetic_state("perf", 60, seed=2, lessons=5)}, "seed")
            os.chdir(repos.work)
            for args in (
                ["--remote", "origin", "compact", "perf"],
                ["--remote", "origin", "lesson", "add", "perf", "Use for...of over typed arrays"],
                ["--remote", "origin", "lesson", "remove", "perf", "1", "--reason", "superseded"],
                ["--remote", "origin", "lesson", "promote", "perf", "1"],
                ["--remote", "origin", "export", "--out", "memory.json"],
            ):
                assert invoke(cli, args) == 0, args
            with Store.open(repos.work, remote="origin") as store:
                text = store.read_text("perf") or ""
            (repos.work / "memory").mkdir()
            (repos.work / "memory" / "perf.md").write_text(text, encoding="utf-8")
            (root / "gh-aw").mkdir()
            autoloop = {"selected": "perf", "selected_file": ".autoloop/programs/perf.md", "state_file_size_bytes": 0,
                        "state_file_max_bytes": 30720, "no_programs": False}  # fmt: skip
            (root / "gh-aw" / "autoloop.json").write_text(json.dumps(autoloop, indent=2) + "\n")
            # What a gh-aw run leaves for the safe-output job and the prepare step.
            item = {"type": "record_iteration", "program": "perf", "status": "accepted", "metric": "0.95"}
            (root / "gh-aw" / "agent_output.json").write_text(json.dumps({"items": [item]}) + "\n")
            # The run context the pre-agent step uploaded (statefile-context), as the job downloads it.
            (root / "runner-temp" / "statefile-context").mkdir(parents=True)
            context = {"statefile_context": 2, "selected": "perf", "run_id": None, "run_attempt": None}
            (root / "runner-temp" / "statefile-context" / "context.json").write_text(json.dumps(context) + "\n")
            shutil.copytree(repos.work / "memory", root / "gh-aw" / "repo-memory" / "autoloop")
        finally:
            os.chdir(cwd)
    return root


@pytest.mark.parametrize(("command", "line"), EXAMPLES, ids=[f"{c}: {e[10:50]}" for c, e in EXAMPLES])
def test_help_example_runs(
    command: str,
    line: str,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(template, root, symlinks=True)
    work = root / "work"
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # `demo --keep` keeps its repositories here
    monkeypatch.setenv("STATEFILE_AUTOLOOP_JSON", str(root / "gh-aw" / "autoloop.json"))
    for key in ("STATEFILE_REMOTE", "STATEFILE_BRANCH", "STATEFILE_DIR", "STATEFILE_JSON"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step-summary.md"))
    # A gh-aw job's environment, pointing at the copy: its bare remote stands for the GitHub repository.
    monkeypatch.setenv("GITHUB_SERVER_URL", f"file://{root}")
    monkeypatch.setenv("GITHUB_REPOSITORY", "remote")
    monkeypatch.setenv("GH_AW_AGENT_OUTPUT", str(root / "gh-aw" / "agent_output.json"))
    monkeypatch.setenv("RUNNER_TEMP", str(root / "runner-temp"))
    words = [os.path.expandvars(word) for word in shlex.split(line.replace("/tmp/gh-aw/", f"{root}/gh-aw/"))]
    redirect = None
    if ">" in words:  # `… > perf.csv`: what the shell would do
        redirect = work / words[words.index(">") + 1]
        words = words[: words.index(">")]
    while words and re.match(r"^[A-Z_]+=", words[0]):
        name, _, _value = words.pop(0).partition("=")
        monkeypatch.setenv(name, "true" if name == "EDITOR" else _value)  # nobody is there to use vim
    assert words[0] == "statefile", line
    args = [match for word in words[1:] for match in (sorted(glob.glob(word)) if "*" in word else [word])]
    if "prepare" in args and "--out" not in args:  # its default is a /tmp/gh-aw path too: mapped the same way
        args += ["--out", PREPARE_DIR.replace("/tmp/gh-aw/", f"{root}/gh-aw/")]
    code = invoke(cli, args)
    captured = capsys.readouterr()
    assert code == 0, f"`{line}` exited {code}: {captured.err}"
    assert "Traceback" not in captured.err
    if redirect is not None:
        redirect.write_text(captured.out)


def test_the_command_list_shows_each_whole_first_sentence(capfd: pytest.CaptureFixture[str]) -> None:
    """As seen: `statefile --help` listed "Record every item the agent reported (gh-aw safe outputs) on..."."""
    assert invoke(cli, ["--help"]) == 0
    listing = capfd.readouterr().out.partition("\nCommands:\n")[2]
    assert "..." not in listing
    flowing = "".join(listing.split())  # wrapping may break a line at any space or hyphen
    for path, command in _commands():
        if len(path) == 1:
            sentence = " ".join(inspect.cleandoc(command.help or "").partition("\n\n")[0].split())
            sentence = sentence[: sentence.index(". ") + 1] if ". " in sentence else sentence
            assert "".join(f"{path[0]} {sentence}".split()) in flowing, path
