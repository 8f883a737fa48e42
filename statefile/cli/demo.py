"""``statefile demo``: the main job end to end, on throwaway repositories built from the bundled samples (a bare
repository plays GitHub, a clone the CI runner), running the real commands a workflow would run."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from unittest.mock import patch

import click

from statefile.cli.run import invoke
from statefile.cli.support import echo, example
from statefile.store import Store

SAMPLE_PROGRAMS = ("fresh", "mid-life", "long-running", "messy")
_IDENTITY = {"NAME": "statefile demo", "EMAIL": "demo@statefile.invalid"}
_DEMO_ENV = {f"GIT_{who}_{key}": value for who in ("AUTHOR", "COMMITTER") for key, value in _IDENTITY.items()}


def sample_text(name: str) -> str:
    """The text of a bundled sample (``fresh``, ``mid-life``, ``long-running``, ``messy``, ``autoloop.json``)."""
    filename = name if name.endswith(".json") else f"{name}.md"
    return resources.files("statefile.samples").joinpath(filename).read_text(encoding="utf-8")


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def build_demo_repos(root: Path) -> Path:
    """Create ``root/remote.git`` (bare, with a memory branch holding the samples) and a clone ``root/runner``."""
    remote = root / "remote.git"
    seed = root / "seed"
    runner = root / "runner"
    _git("init", "--bare", "--quiet", "--initial-branch=main", str(remote), cwd=root)
    _git("init", "--quiet", "--initial-branch=main", str(seed), cwd=root)
    (seed / "README.md").write_text("A project whose Autoloop programs keep memory on memory/autoloop.\n")
    _git("add", "README.md", cwd=seed)
    _git("commit", "--quiet", "-m", "Initial commit", cwd=seed)
    _git("remote", "add", "origin", str(remote), cwd=seed)
    _git("push", "--quiet", "origin", "main", cwd=seed)
    # Seed the branch as agents leave it today: the long-running file is far over the 30 KB budget.
    with Store.open(seed, remote="origin", max_bytes=10_000_000) as store:
        files = {f"{name}.md": sample_text(name) for name in SAMPLE_PROGRAMS}
        store.write_files(files, "Seed memory/autoloop with the statefile samples")
    _git("clone", "--quiet", str(remote), str(runner), cwd=root)
    shutil.rmtree(seed)
    return runner


def run_demo(command: click.Command, echo: Callable[[str], None], *, keep: bool = False) -> None:
    """Run the demo with the root ``command``, printing each command line and its output through ``echo``."""
    root = Path(tempfile.mkdtemp(prefix="statefile-demo-"))
    try:
        with patch.dict(os.environ, _DEMO_ENV):
            _steps(command, echo, root)
    finally:
        if keep:
            echo(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _steps(command: click.Command, echo: Callable[[str], None], root: Path) -> None:
    runner = build_demo_repos(root)
    autoloop_json = root / "autoloop.json"
    autoloop_json.write_text(sample_text("autoloop.json"), encoding="utf-8")

    def run(*args: str) -> None:
        echo(f"\n$ {shlex.join(['statefile', *args])}")  # quoted: each line can be pasted into a shell
        code = invoke(command, ["--repo", str(runner), "--remote", "origin", *args])
        if code:
            echo(f"(exit {code})")

    echo(f"demo: a bare remote and a runner clone in {root}; memory branch seeded with the samples")
    run("list")
    run("check")
    run("compact", "long-running")
    run("record", "mid-life", "--status", "accepted", "--change", "Vectorize the tokenizer inner loop",
        "--metric", "131.5")  # fmt: skip
    run("record", "mid-life", "--status", "rejected", "--change", "Swap the hash map for a sorted vector",
        "--metric", "130.9")  # fmt: skip
    run("record", "messy", "--status", "error", "--change", "Parallel parse (CI timed out)")
    run("check")
    run("report", "--out", str(autoloop_json))
    report = json.loads(autoloop_json.read_text(encoding="utf-8"))
    echo(
        f"autoloop.json now has state_file_size_bytes={report.get('state_file_size_bytes')} "
        f"for selected={report.get('selected')!r}, every scheduler key kept"
    )
    run("log", "long-running")
    run("expand", "long-running", "7")
    run("render", "mid-life", "--level", "index")
    run("render", "mid-life", "--budget", "1500")
    echo("\nThat is the whole job: records, compaction with an archive, a scheduler report, a readable log.")


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the temporary repositories and print where they are.")
@example("statefile demo --keep")
@click.pass_context
def demo_cmd(ctx: click.Context, keep: bool) -> None:
    """Run the main job end to end on a temporary repo with a bare remote built from the samples.

    Records iterations, compacts a long-running file, reports for the scheduler, and shows the log.
    """
    run_demo(ctx.find_root().command, echo=echo, keep=keep)
