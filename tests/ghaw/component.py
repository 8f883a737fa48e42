"""Loading a shipped gh-aw component and running its steps the way a runner would.

GitHub Actions evaluates ``${{ … }}`` in ``env:`` and ``run:`` before a step runs and gives every step the default
variables (``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_RUN_ID``, ``GITHUB_RUN_ATTEMPT``, …); gh-aw adds
``GH_AW_AGENT_OUTPUT`` to each step of a custom safe-output job (``safe_jobs.go``).  :func:`run_steps` does that
with a small, strict expression table (an unknown expression fails the test), runs each ``run:`` script with
``bash -e`` as the runner's default shell for ``run`` does, and skips ``uses:`` steps (actions are not run here)
and the step whose ``id`` is ``install-statefile`` (it installs from the network; the tests use the checkout's
``statefile`` on ``PATH`` instead, and check that step's command line separately).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

COMPONENT = Path(__file__).resolve().parents[2] / "workflows" / "shared" / "statefile.md"
INSTALL_STEP_ID = "install-statefile"
_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def load_component(path: Path = COMPONENT) -> tuple[dict[str, Any], str]:
    """The component's frontmatter (YAML) and its markdown body (the prompt fragment)."""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n(.*)\Z", text, re.S)
    assert match, f"{path} has no frontmatter"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict)
    return data, match.group(2)


@dataclass
class StepRun:
    """One step that ran: its name, exit code and output."""

    name: str
    returncode: int
    stdout: str
    stderr: str


def _evaluate(text: str, contexts: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression not in contexts:
            raise AssertionError(f"the test runner does not know the expression {expression!r}")
        return contexts[expression]

    return _EXPR.sub(one, text)


def run_steps(
    steps: list[dict[str, Any]],
    *,
    env: dict[str, str],
    contexts: dict[str, str],
    cwd: Path,
    bin_dir: Path,
    path_map: dict[str, str] | None = None,
) -> list[StepRun]:
    """Run ``steps`` in order; after a failing one, only the steps with ``if: always()`` run (as in a job).
    ``bin_dir`` goes first on PATH.

    ``path_map`` rewrites fixed runner paths in scripts (``/tmp/gh-aw`` → this run's folder): the one change made
    to a shipped script, so that runs of a test (and tests running at once) do not share ``/tmp/gh-aw``.
    """
    runs: list[StepRun] = []
    failed = False
    for step in steps:
        if "uses" in step or step.get("id") == INSTALL_STEP_ID:
            continue
        if failed and "always()" not in str(step.get("if", "")):
            continue
        step_env = {**os.environ, **env, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        for key, value in (step.get("env") or {}).items():
            step_env[key] = _evaluate(str(value), contexts)
        script = _evaluate(step["run"], contexts)
        for old, new in (path_map or {}).items():
            script = script.replace(old, new)
        done = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=step_env, capture_output=True, text=True,
                              check=False)  # fmt: skip
        runs.append(StepRun(str(step.get("name", "run")), done.returncode, done.stdout, done.stderr))
        failed = failed or done.returncode != 0
    return runs


GUIDE = COMPONENT.parents[1] / "README.md"


def documented_frontmatter(heading: str, path: Path = GUIDE) -> dict[str, Any]:
    """The frontmatter excerpt the guide (``workflows/README.md``) gives under ``heading``: its first ``yaml`` block
    after that heading, parsed as the workflow's YAML (so a test runs the very steps a user copies)."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    match = re.search(r"^```yaml\n(.*?)^```", text[start:], re.M | re.S)
    assert match, f"{path}: no yaml block under {heading!r}"
    body = re.sub(r"^---\s*$", "", match.group(1), flags=re.M)
    data = yaml.safe_load(body)
    assert isinstance(data, dict)
    return data


def bin_dir() -> Path:
    """Where the checkout's ``statefile`` console script lives (the test's stand-in for the install step)."""
    return Path(sys.executable).parent


def job_config(frontmatter: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What gh-aw's compiler writes into the safe-outputs ``config.json`` for the component's custom jobs."""
    jobs = (frontmatter.get("safe-outputs") or {}).get("jobs") or {}
    return {job_id: {"inputs": job.get("inputs", {}), **({"max": job["max"]} if "max" in job else {})}
            for job_id, job in jobs.items()}  # fmt: skip
