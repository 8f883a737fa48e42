"""Every workflow and action the project ships passes the Actions linters: zizmor and the GitHub schemas.

What is linted (:data:`WORKFLOWS`, :data:`ACTIONS`, :data:`DEPENDABOT` and the component):

- the project's own CI and release workflows (``.github/workflows/*.yml``) and Dependabot's configuration;
- what it ships for users: the maintenance workflow, the composite action, and the gh-aw component
  (``workflows/shared/statefile.md``).  The component is no workflow of its own: gh-aw's compiler lays its
  ``pre-agent-steps`` into the agent job and its ``safe-outputs.jobs`` into jobs of their own.  It is linted as
  such a compiled workflow, written to a temporary folder (:func:`component_workflow`).

zizmor runs offline with its default persona, no configuration file and no ignore comments honoured (a finding
cannot be silenced by a comment in a shipped file); check-jsonschema uses its built-in copies of the GitHub
workflow and action schemas (no network).  Both are in the ``test`` extra; a test skips, saying why, only when
its linter cannot be found.  Each linter is also shown a broken file, so a linter that looks at nothing cannot
pass for one that found nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import installed_tool
from ghaw.component import load_component
from ghaw.workflow import UPLOAD_AGENT_ARTIFACTS, compiled_safe_job

ROOT = Path(__file__).resolve().parents[1]
#: Workflows the project ships or runs (each must exist).
WORKFLOWS = sorted([ROOT / "workflows" / "statefile-maintenance.yml", *(ROOT / ".github" / "workflows").glob("*.yml")])
ACTIONS = [ROOT / "action.yml"]
#: Dependabot keeps the pinned action commits current.
DEPENDABOT = ROOT / ".github" / "dependabot.yml"
TIMEOUT = 120

#: The agent job's checkout as gh-aw's compiler writes it (Autoloop's lock file): no credentials kept.
CHECKOUT = "actions/checkout@de0fac2e4500dabe0009e67214ff5f5447ce83dd"
#: Keys of a custom safe-output job that are gh-aw's own (the tool the agent sees), not GitHub's.
GH_AW_JOB_KEYS = {"description", "max", "output", "inputs"}
#: Keys a GitHub Actions job may have, which the compiler copies through.
GITHUB_JOB_KEYS = {"runs-on", "timeout-minutes", "permissions", "steps", "env", "if", "needs", "environment",
                   "concurrency", "outputs", "container", "services", "strategy", "continue-on-error", "defaults",
                   "name"}  # fmt: skip

# A workflow with what the linters must catch: an unpinned action, a checkout keeping credentials, an expression
# pasted into a script, default (write-all) permissions, and a key no workflow has.
BROKEN = """\
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.head_commit.message }}"
"""


def _env() -> dict[str, str]:
    """No token reaches the linters (zizmor would use one for online audits); zizmor stays offline regardless."""
    env = {k: v for k, v in os.environ.items() if k not in {"GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_GITHUB_TOKEN"}}
    return {**env, "ZIZMOR_OFFLINE": "true", "NO_COLOR": "1"}


def zizmor(*paths: Path) -> tuple[list[dict[str, Any]], str]:
    """zizmor's findings on ``paths`` (default persona, offline) and its readable report of them."""
    exe = installed_tool("zizmor")
    common = [exe, "--offline", "--no-config", "--no-ignores", "--strict-collection", "--no-progress"]
    done = subprocess.run([*common, "--format", "json", *map(str, paths)], capture_output=True, text=True,
                          env=_env(), timeout=TIMEOUT, check=False)  # fmt: skip
    # Exit codes: 0 clean, 10-14 findings by highest severity; anything else is zizmor failing to run.
    assert done.returncode == 0 or 10 <= done.returncode <= 14, done.stderr
    findings: list[dict[str, Any]] = json.loads(done.stdout)
    report = ""
    if findings:
        plain = subprocess.run([*common, "--color", "never", *map(str, paths)], capture_output=True, text=True,
                               env=_env(), timeout=TIMEOUT, check=False)  # fmt: skip
        report = plain.stdout
    return findings, report


def check_jsonschema(schema: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    exe = installed_tool("check-jsonschema")
    return subprocess.run([exe, "--builtin-schema", schema, "--color", "never", *map(str, paths)],
                          capture_output=True, text=True, env=_env(), timeout=TIMEOUT, check=False)  # fmt: skip


def component_workflow(folder: Path) -> Path:
    """The component as gh-aw's compiler lays it out, roughly: an agent job (gh-aw's checkout without credentials,
    the ``pre-agent-steps``, gh-aw's upload of the agent artifact) and, after it, each ``safe-outputs.jobs`` job
    with its GitHub keys and the compiled steps (gh-aw's download of the agent artifact, then the job's own)."""
    frontmatter, _ = load_component()
    jobs: dict[str, Any] = {
        "agent": {
            "runs-on": "ubuntu-latest",
            "permissions": {"contents": "read"},
            "steps": [
                {"name": "Checkout repository", "uses": CHECKOUT, "with": {"persist-credentials": False}},
                *frontmatter["pre-agent-steps"],
                UPLOAD_AGENT_ARTIFACTS,
            ],
        }
    }
    for job_id, job in frontmatter["safe-outputs"]["jobs"].items():
        unknown = set(job) - GITHUB_JOB_KEYS - GH_AW_JOB_KEYS
        assert not unknown, f"{job_id}: keys this layout does not know, so would not lint: {sorted(unknown)}"
        compiled = {key: value for key, value in job.items() if key in GITHUB_JOB_KEYS}
        jobs[job_id] = {"needs": "agent", **compiled, "steps": compiled_safe_job(job)}
    workflow = {
        "name": "statefile component (as compiled by gh-aw)",
        "on": {"workflow_dispatch": None},
        "permissions": {},
        "jobs": jobs,
    }
    path = folder / "statefile-component.yml"
    path.write_text(yaml.dump(workflow, Dumper=_BlockDumper, sort_keys=False, width=200, allow_unicode=True),
                    encoding="utf-8")  # fmt: skip
    return path


class _BlockDumper(yaml.SafeDumper):
    """Scripts as literal blocks (``run: |``), as they are written in the component, so a finding's excerpt reads
    like the source."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_BlockDumper.add_representer(str, _str)


def test_the_shipped_files_are_all_there() -> None:
    names = {str(path.relative_to(ROOT)) for path in [*WORKFLOWS, *ACTIONS, DEPENDABOT]}
    assert {".github/workflows/ci.yml", ".github/workflows/release.yml", "workflows/statefile-maintenance.yml",
            "action.yml", ".github/dependabot.yml"} <= names  # fmt: skip
    assert all(path.is_file() for path in [*WORKFLOWS, *ACTIONS, DEPENDABOT])


@pytest.mark.slow
def test_zizmor_finds_nothing_in_the_workflows_and_the_action(tmp_path: Path) -> None:
    findings, report = zizmor(*WORKFLOWS, *ACTIONS, DEPENDABOT, component_workflow(tmp_path))
    assert findings == [], report


@pytest.mark.slow
def test_zizmor_finds_what_is_wrong(tmp_path: Path) -> None:
    """The same run sees a broken workflow's problems: the clean result above is zizmor looking, not skipping."""
    broken = tmp_path / "broken.yml"
    broken.write_text(BROKEN, encoding="utf-8")
    findings, report = zizmor(broken)
    assert {"unpinned-uses", "artipacked", "template-injection"} <= {f["ident"] for f in findings}, report


@pytest.mark.slow
def test_the_workflows_follow_githubs_workflow_schema(tmp_path: Path) -> None:
    done = check_jsonschema("vendor.github-workflows", *WORKFLOWS, component_workflow(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_action_follows_githubs_action_schema() -> None:
    done = check_jsonschema("vendor.github-actions", *ACTIONS)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_dependabot_follows_its_schema() -> None:
    done = check_jsonschema("vendor.dependabot", DEPENDABOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(BROKEN.replace("runs-on:", "runs_on:"), encoding="utf-8")
    done = check_jsonschema("vendor.github-workflows", broken)
    assert done.returncode == 1 and "runs_on" in done.stdout + done.stderr, done.stdout + done.stderr


# Every action is pinned to a full commit sha with the release in a comment, the form gh-aw's lock files use.
_USES = re.compile(r"^\s*(?:- )?uses: (\S+)(.*)$", re.M)


@pytest.mark.parametrize(
    "path",
    [*WORKFLOWS, *ACTIONS, ROOT / "workflows" / "shared" / "statefile.md"],
    ids=lambda path: str(path.relative_to(ROOT)),
)
def test_every_action_is_pinned_to_a_commit_with_its_version(path: Path) -> None:
    uses = _USES.findall(path.read_text(encoding="utf-8"))
    assert uses, f"{path}: no action used"
    for ref, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), f"{ref}: not pinned to a commit"
        assert re.fullmatch(r"\s+# v\d+(?:\.\d+){0,2}", comment), f"{ref}: no '# vN[.N[.N]]' comment naming the release"


def test_one_sha_per_action_across_the_project() -> None:
    """The same action is pinned to the same commit everywhere (one bump updates them all)."""
    pins: dict[str, set[str]] = {}
    for path in [*WORKFLOWS, *ACTIONS, ROOT / "workflows" / "shared" / "statefile.md"]:
        for ref, _ in _USES.findall(path.read_text(encoding="utf-8")):
            action, sha = ref.split("@")
            pins.setdefault(action, set()).add(sha)
    assert {action: shas for action, shas in pins.items() if len(shas) > 1} == {}
