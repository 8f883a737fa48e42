"""The shipped gh-aw component (workflows/shared/statefile.md) against gh-aw's documented schema and statefile."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
import pytest
from ghaw import scheduler
from ghaw.component import INSTALL_STEP_ID, bin_dir, load_component, run_steps
from ghaw.schema import tool_name, validate_component
from ghaw.workflow import World

from statefile.app.ghaw import INPUTS, ITEM_TYPE, JOB_ID, PREPARE_DIR
from statefile.cli import cli
from statefile.integrations.ghaw import tool_type
from statefile.model.synthetic import synthetic_state

INSTALL = re.compile(r'^python3 -m pip install --quiet "git\+https://github\.com/[A-Za-z0-9_.-]+/statefile@[\w.-]+"$')


@pytest.fixture(scope="module")
def component() -> tuple[dict[str, Any], str]:
    return load_component()


def test_the_component_conforms_to_the_documented_schema(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, body = component
    assert validate_component(frontmatter) == []
    assert body.strip(), "the component carries a prompt fragment for the agent"


def test_the_schema_check_can_fail(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, _ = component
    broken = copy.deepcopy(frontmatter)
    job = broken["safe-outputs"]["jobs"][JOB_ID]
    del job["description"]
    job["inputs"]["metric"]["type"] = "float"
    job["inputs"]["status"]["options"] = ["accepted"]
    job["colour"] = "blue"
    broken["on"] = {"schedule": "daily"}
    broken["safe-outputs"]["jobs"]["Bad.Name"] = {}
    problems = "\n".join(validate_component(broken))
    for expected in ("'description' is required", "'float' is not one of", "options only go with type choice",
                     "unknown key 'colour'", "has no 'on:'", "no dots"):  # fmt: skip
        assert expected in problems


def test_job_inputs_are_exactly_what_apply_reads(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, _ = component
    job = frontmatter["safe-outputs"]["jobs"][JOB_ID]
    declared = {name: (spec.get("required", False), spec["description"]) for name, spec in job["inputs"].items()}
    assert declared == INPUTS
    # Strings everywhere: gh-aw's ingestion drops an item whose number input arrives as a string and vice versa;
    # an agent reliably sends what the tool schema says, and statefile reads numbers out of strings.
    assert {spec["type"] for spec in job["inputs"].values()} == {"string"}


def test_tool_name_item_type_and_job_id_agree(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, body = component
    (job_id,) = frontmatter["safe-outputs"]["jobs"]
    assert job_id == JOB_ID and tool_name(job_id) == tool_type(job_id) == ITEM_TYPE
    assert f"`{ITEM_TYPE}`" in body, "the prompt fragment names the tool the agent must call"
    # gh-aw fires the job when output_types *contains* its type: no built-in type may contain ours.
    assert ITEM_TYPE not in {"add_comment", "create_pull_request", "push_to_pull_request_branch", "create_issue",
                             "update_issue", "add_labels", "remove_labels", "missing_tool", "noop"}  # fmt: skip


def test_the_job_writes_the_branch_with_one_statefile_command(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, _ = component
    job = frontmatter["safe-outputs"]["jobs"][JOB_ID]
    assert job["permissions"] == {"contents": "write"}
    runs = [s for s in job["steps"] if "run" in s and s.get("id") != INSTALL_STEP_ID]
    writes = [s for s in runs if " apply " in s["run"]]
    assert len(writes) == 1
    # Any other step only reads: the summary of the memory on the run's page.
    assert all(" summary " in s["run"] and " apply " not in s["run"] for s in runs if s not in writes)
    runs = writes
    command = runs[0]["run"]
    assert command.count("statefile ") == 1 and " apply " in command and '"$GH_AW_AGENT_OUTPUT"' in command
    assert '--remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git"' in command
    assert runs[0]["env"] == {"GITHUB_TOKEN": "${{ github.token }}"}, "the token reaches git only as a header"


def test_install_lines_are_the_documented_ones(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, _ = component
    installs = [s["run"] for key in ("pre-agent-steps",) for s in frontmatter[key] if s.get("id") == INSTALL_STEP_ID]
    installs += [
        s["run"] for s in frontmatter["safe-outputs"]["jobs"][JOB_ID]["steps"] if s.get("id") == INSTALL_STEP_ID
    ]
    assert len(installs) == 2 and installs[0] == installs[1]
    assert INSTALL.match(installs[0]), installs[0]


def test_the_pre_agent_step_writes_where_the_prompt_says(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, body = component
    script = "\n".join(s.get("run", "") for s in frontmatter["pre-agent-steps"])
    assert f"--out {PREPARE_DIR}" in script and "report --out /tmp/gh-aw/autoloop.json" in script
    assert f"{PREPARE_DIR}/memory.md" in body
    assert "repo-memory:" not in frontmatter.get("tools", {}), "the component must not bring repo-memory back"


ROOT = Path(__file__).resolve().parents[1]
#: Every file that tells a user how to install statefile or use its action.
INSTALL_DOCS = (
    "README.md",
    "workflows/README.md",
    "workflows/shared/statefile.md",
    "workflows/statefile-maintenance.yml",
)
_REF = re.compile(r"OWNER/statefile@([\w.-]+)")


def test_every_install_line_names_a_ref_that_exists() -> None:
    """An install line must work today: the ref it pins is this repository's main branch or one of its tags."""
    done = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        pytest.skip(f"not a git checkout, so its tags are unknown: {done.stderr.strip()}")
    refs = {ref for doc in INSTALL_DOCS for ref in _REF.findall((ROOT / doc).read_text(encoding="utf-8"))}
    assert refs, "no install line found"
    missing = refs - {"main", *done.stdout.split()}
    assert not missing, f"install lines pin refs this repository does not have: {sorted(missing)}"


FAKE_TOKEN = "ghs_pReStEpT0kEnNeVeRpRiNtEd0123456789ab"
PERF = "---\nmetric_direction: lower\ntarget-metric: 80\n---\n\n# Perf\n\n## Goal\n\nFaster parsing.\n"


@pytest.mark.parametrize("branch", [False, True], ids=["first-run-no-branch", "branch-but-no-clone"])
def test_pre_agent_steps_read_the_branch_by_url_without_the_schedulers_clone(tmp_path: Path, branch: bool) -> None:
    """The component's fallback: no clone of memory/autoloop beside the scheduler (the first run of all, when the
    branch does not exist yet, leaves an empty folder), so report, check and prepare read the branch through
    "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" with GITHUB_TOKEN in the environment: they work, and the token is
    neither printed nor stored in the checkout."""
    world = World(tmp_path, "lossless", "---\non: {}\n---\n", {"perf": PERF})
    state = synthetic_state("perf", 6, seed=3)
    if branch:
        world.seed_memory({"perf.md": state})
    run = world.new_run()
    clone = run.gh_aw / "repo-memory" / "autoloop"
    clone.mkdir(parents=True)  # what Autoloop's clone step leaves when the branch does not exist: an empty folder
    code, _ = scheduler.run_scheduler(
        world.workspace, clone, run.gh_aw / "autoloop.json", now=datetime.now(timezone.utc)
    )
    assert code == 0
    frontmatter, _ = load_component()
    steps = run_steps(frontmatter["pre-agent-steps"], env={**run.env(), "GITHUB_TOKEN": FAKE_TOKEN},
                      contexts=run.contexts(), cwd=world.workspace, bin_dir=bin_dir(),
                      path_map={"/tmp/gh-aw": str(run.gh_aw)})  # fmt: skip
    output = "".join(s.stdout + s.stderr for s in steps)
    assert [s.returncode for s in steps] == [0] * len(steps), output
    assert "--remote" in frontmatter["pre-agent-steps"][-1]["run"] and FAKE_TOKEN not in output
    autoloop = json.loads((run.gh_aw / "autoloop.json").read_text())
    assert autoloop["selected"] == "perf"
    assert autoloop["state_file_size_bytes"] == (len(state.encode()) if branch else 0)
    memory = (run.gh_aw / "agent" / "statefile" / "memory.md").read_text()
    assert ("first iteration" in memory) != branch and "perf" in memory
    context = json.loads((run.gh_aw / "agent" / "statefile" / "context.json").read_text())
    assert context["metric_direction"] == "lower" and context["target_metric"] == "80"
    config = (world.workspace / ".git" / "config").read_text()
    assert FAKE_TOKEN not in config and "extraheader" not in config and "statefile" not in config


def test_the_path_2_prompt_uses_only_real_options() -> None:
    """The paragraph the guide asks path-2 users to paste into their prompt names options that exist."""
    text = (ROOT / "workflows" / "README.md").read_text(encoding="utf-8")
    paragraph = text.split("<!-- statefile: path 2 prompt -->\n", 1)[1].split("\n\n", 1)[0]
    known: set[str] = set()
    for name in ("render", "record"):
        assert f"statefile --repo-memory {name} {{selected}}" in paragraph
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        known.update(opt for param in command.params for opt in getattr(param, "opts", []))
    used = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", paragraph))
    assert used and used <= known, sorted(used - known)
