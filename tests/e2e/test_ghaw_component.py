"""The shipped gh-aw component (workflows/shared/statefile.md) against gh-aw's documented schema and statefile."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click
import pytest
from ghaw import scheduler
from ghaw.component import (
    COMPONENT,
    DOWNLOAD_ACTION,
    INSTALL_STEP_ID,
    UPLOAD_ACTION,
    ArtifactStore,
    action_of,
    bin_dir,
    job_config,
    load_component,
    run_steps,
)
from ghaw.schema import tool_name, validate_component
from ghaw.workflow import UPLOAD_AGENT_ARTIFACTS, World, compiled_safe_job
from synthetic import synthetic_state

from statefile.app.ghaw import (
    AGENT_DIR,
    CONTEXT_ARTIFACT,
    CONTEXT_FILE,
    INPUTS,
    ITEM_TYPE,
    JOB_ID,
    MAX_ITEMS_PER_RUN,
    PREPARE_DIR,
    REFUSED_INPUTS,
)
from statefile.cli import cli
from statefile.integrations.ghaw import tool_type
from statefile.views.render import TOOL_NAMES

# A pinned release from PyPI (tests/test_release.py checks it is the version this checkout releases).
INSTALL = re.compile(r'^python3 -m pip install --quiet "statefile==\d+\.\d+\.\d+"$')


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
    assert "--context " in command and "--any-program" not in command, "a gh-aw job always names its run context"
    assert runs[0]["env"] == {"GITHUB_TOKEN": "${{ github.token }}"}, "the token reaches git only as a header"


def _flag(script: str, flag: str) -> str:
    """The quoted value of ``flag`` in a step's script (``--context-out "$RUNNER_TEMP/x"`` → ``$RUNNER_TEMP/x``)."""
    values: list[str] = re.findall(rf'{re.escape(flag)} "([^"]+)"', script)
    assert len(values) == 1, (flag, script)
    return values[0]


def _as_expression(path: str) -> str:
    """A path a script writes with ``$RUNNER_TEMP``, as a ``with:`` input spells it (``${{ runner.temp }}``)."""
    return path.replace("$RUNNER_TEMP", "${{ runner.temp }}")


def test_the_run_context_travels_in_its_own_artifact_uploaded_before_the_agent(
    component: tuple[dict[str, Any], str],
) -> None:
    """The channel the safe-output job trusts: prepare writes the context outside the agent's folder, a step of
    the component uploads exactly that file as an artifact before the agent starts (pre-agent-steps), failing when
    it is missing; the job downloads that artifact before apply runs and hands apply that file, and no other."""
    frontmatter, _ = component
    pre = frontmatter["pre-agent-steps"]
    [prepare_at] = [i for i, s in enumerate(pre) if " prepare " in s.get("run", "")]
    [upload_at] = [i for i, s in enumerate(pre) if action_of(s) == UPLOAD_ACTION]
    assert prepare_at < upload_at, "the upload must see the file prepare wrote"
    context_out = _flag(pre[prepare_at]["run"], "--context-out")
    assert context_out.startswith("$RUNNER_TEMP/"), "outside /tmp/gh-aw: the agent's folders are all below it"
    assert not context_out.startswith(("/tmp/gh-aw", AGENT_DIR)) and PREPARE_DIR not in context_out
    upload = pre[upload_at]["with"]
    assert upload["name"] == CONTEXT_ARTIFACT
    assert upload["path"] == f"{_as_expression(context_out)}/{CONTEXT_FILE}", "the very file prepare wrote, alone"
    assert upload["if-no-files-found"] == "error", "no context, no agent: the job could not trust anything"
    assert "overwrite" not in upload and "continue-on-error" not in pre[upload_at]
    job = frontmatter["safe-outputs"]["jobs"][JOB_ID]
    steps = job["steps"]
    [download_at] = [i for i, s in enumerate(steps) if action_of(s) == DOWNLOAD_ACTION]
    [apply_at] = [i for i, s in enumerate(steps) if " apply " in s.get("run", "")]
    assert download_at < apply_at
    download = steps[download_at]
    assert download["with"]["name"] == CONTEXT_ARTIFACT and "continue-on-error" not in download
    assert "if" not in download and "if" not in steps[apply_at], "apply runs only after the download succeeded"
    downloaded = f"{download['with']['path']}/{CONTEXT_FILE}"
    assert _as_expression(_flag(steps[apply_at]["run"], "--context")) == downloaded
    assert "gh-aw/safe-jobs" not in downloaded, "never the copy inside the agent's artifact"


def test_one_report_per_run_and_no_maintainer_inputs(component: tuple[dict[str, Any], str]) -> None:
    """gh-aw passes on at most ``max`` items of the job's type (what its ingestion reads from the compiled config),
    the same cap apply keeps; no input lets the agent write what only maintainers may (Current Priorities)."""
    frontmatter, body = component
    job = frontmatter["safe-outputs"]["jobs"][JOB_ID]
    assert job["max"] == MAX_ITEMS_PER_RUN == 1
    assert job_config(frontmatter)[JOB_ID]["max"] == MAX_ITEMS_PER_RUN
    assert not set(REFUSED_INPUTS) & set(job["inputs"]), "a refused input must not be offered as a tool input"
    offered = set(re.findall(r"`([a-z_]+)`", body)) - {ITEM_TYPE}
    assert offered and offered <= set(job["inputs"]), f"the prompt offers inputs the tool lacks: {offered}"


# Actions are pinned to a full commit sha, the release named in a comment (the form gh-aw's compiler writes).
_USES = re.compile(r"^\s*(?:- )?uses: (\S+)(.*)$", re.M)


def test_every_action_is_pinned_to_a_commit_with_its_version(component: tuple[dict[str, Any], str]) -> None:
    frontmatter, _ = component
    raw = COMPONENT.read_text(encoding="utf-8").split("\n---\n", 1)[0]
    pinned = _USES.findall(raw)
    steps = [*frontmatter["pre-agent-steps"], *frontmatter["safe-outputs"]["jobs"][JOB_ID]["steps"]]
    assert sorted(ref for ref, _ in pinned) == sorted(s["uses"] for s in steps if "uses" in s) != []
    for ref, comment in pinned:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), f"{ref}: not pinned to a commit"
        assert re.fullmatch(r"\s+# v\d+(?:\.\d+){0,2}", comment), f"{ref}: no '# vN' comment naming the release"
    # The artifact actions are the commits gh-aw itself pins for its artifacts (Autoloop's compiled lock): the
    # context travels by the same code as the agent's own artifact.
    shas = {ref.split("@")[0]: ref.split("@")[1] for ref, _ in pinned}
    assert shas[UPLOAD_ACTION] == UPLOAD_AGENT_ARTIFACTS["uses"].split("@")[1]
    assert shas[DOWNLOAD_ACTION] == compiled_safe_job({"steps": []})[0]["uses"].split("@")[1]


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
    assert f"--out {PREPARE_DIR} " in script and "report --out /tmp/gh-aw/autoloop.json" in script
    assert f"{PREPARE_DIR}/memory.md" in body
    assert "repo-memory:" not in frontmatter.get("tools", {}), "the component must not bring repo-memory back"


ROOT = Path(__file__).resolve().parents[2]
#: Every file that tells a user how to install statefile or use its action.
INSTALL_DOCS = (
    "README.md",
    "docs/agents.md",
    "workflows/README.md",
    "workflows/shared/statefile.md",
    "workflows/statefile-maintenance.yml",
)
# The documented fallback ahead of a release names a commit the user tried: `OWNER/statefile@<40-hex sha>`.
COMMIT_PLACEHOLDER = "<40-hex sha>"
_REF = re.compile(rf"OWNER/statefile@({re.escape(COMMIT_PLACEHOLDER)}|[\w.-]+)")


def test_every_install_line_names_a_ref_that_exists() -> None:
    """A git install line must work today: the ref it names is the placeholder for a commit the user tried, this
    repository's main branch or one of its tags."""
    done = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        pytest.skip(f"not a git checkout, so its tags are unknown: {done.stderr.strip()}")
    refs = {ref for doc in INSTALL_DOCS for ref in _REF.findall((ROOT / doc).read_text(encoding="utf-8"))}
    assert refs, "no install line found"
    missing = refs - {COMMIT_PLACEHOLDER, "main", *done.stdout.split()}
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
                      path_map={"/tmp/gh-aw": str(run.gh_aw)}, artifacts=run.artifacts)  # fmt: skip
    output = "".join(s.stdout + s.stderr for s in steps)
    assert [s.returncode for s in steps] == [0] * len(steps), output
    assert "--remote" in frontmatter["pre-agent-steps"][-2]["run"] and FAKE_TOKEN not in output
    autoloop = json.loads((run.gh_aw / "autoloop.json").read_text())
    assert autoloop["selected"] == "perf"
    assert autoloop["state_file_size_bytes"] == (len(state.encode()) if branch else 0)
    memory = (run.gh_aw / "agent" / "statefile" / "memory.md").read_text()
    assert ("first iteration" in memory) != branch and "perf" in memory
    # The context went to the artifact, outside everything the agent can write.
    assert not list((run.gh_aw / "agent").rglob(CONTEXT_FILE))
    uploaded = run.artifacts.files(CONTEXT_ARTIFACT)
    assert list(uploaded) == [CONTEXT_FILE]
    assert uploaded[CONTEXT_FILE] == (run.agent_temp / CONTEXT_ARTIFACT / CONTEXT_FILE).read_bytes()
    context = json.loads(uploaded[CONTEXT_FILE])
    assert context["metric_direction"] == "lower" and context["target_metric"] == "80"
    assert context["selected"] == "perf" and context["run_id"] == run.run_id and context["run_attempt"] == "1"
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


# -- the runner re-statement's artifacts (tests/ghaw/component.py): the channel above rests on these behaviours --

UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"
DOWNLOAD = "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"


def _run(tmp_path: Path, store: ArtifactStore, steps: list[dict[str, Any]], attempt: int = 1) -> list[Any]:
    return run_steps(steps, env={"GITHUB_RUN_ATTEMPT": str(attempt), "RUNNER_TEMP": str(tmp_path / "temp")},
                     contexts={"runner.temp": str(tmp_path / "temp")}, cwd=tmp_path / "work", bin_dir=bin_dir(),
                     artifacts=store)  # fmt: skip


def test_an_artifact_is_the_files_at_upload_time_and_cannot_be_replaced_in_the_attempt(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    (tmp_path / "work").mkdir()
    context = tmp_path / "temp" / "ctx" / "context.json"
    context.parent.mkdir(parents=True)
    context.write_text("honest")
    upload = {"uses": UPLOAD, "with": {"name": "ctx", "path": "${{ runner.temp }}/ctx/context.json",
                                       "if-no-files-found": "error"}}  # fmt: skip
    [done] = _run(tmp_path, store, [upload])
    assert done.returncode == 0 and store.files("ctx") == {"context.json": b"honest"}
    context.write_text("forged")  # the file changes after the upload: the artifact does not
    [again] = _run(tmp_path, store, [upload])
    assert again.returncode == 1 and "409" in again.stderr and store.files("ctx") == {"context.json": b"honest"}
    download = {"uses": DOWNLOAD, "with": {"name": "ctx", "path": "${{ runner.temp }}/got"}}
    [got] = _run(tmp_path, store, [download], attempt=2)  # a re-run job finds attempt 1's upload
    assert got.returncode == 0 and (tmp_path / "temp" / "got" / "context.json").read_text() == "honest"
    [rerun] = _run(tmp_path, store, [upload], attempt=2)  # a re-run of the whole workflow uploads afresh
    assert rerun.returncode == 0 and store.files("ctx") == {"context.json": b"forged"}
    assert store.files("ctx", attempt=1) == {"context.json": b"honest"}


def test_missing_files_and_artifacts_fail_the_step_and_the_job(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    (tmp_path / "work").mkdir()
    given = {"name": "a", "path": "${{ runner.temp }}/none.json"}
    missing = {"uses": UPLOAD, "with": given}
    strict = {**missing, "with": {**given, "if-no-files-found": "error"}}
    ignored = {**missing, "with": {**given, "if-no-files-found": "ignore"}}
    (warned,) = _run(tmp_path, store, [missing])
    assert warned.returncode == 0 and "::warning::No files were found" in warned.stdout
    assert _run(tmp_path, store, [ignored])[0].stdout == "" and not (tmp_path / "artifacts").exists()
    after = {"name": "after", "run": "echo ran"}
    always = {"name": "always", "if": "always()", "run": "echo always"}
    runs = _run(tmp_path, store, [strict, after, always])
    assert [r.name for r in runs] == [UPLOAD, "always"] and runs[0].returncode == 1
    download = {"uses": DOWNLOAD, "with": {"name": "never-uploaded", "path": "x"}}
    tolerated = {**download, "continue-on-error": True}
    assert [r.returncode for r in _run(tmp_path, store, [tolerated, after])] == [1, 0]
    assert [r.name for r in _run(tmp_path, store, [download, after])] == [DOWNLOAD]
    other = {"uses": "actions/setup-python@a309ff8b426b58ec0e2a45f0f869d46889d02405", "with": {"x": "${{ nope }}"}}
    assert _run(tmp_path, store, [other]) == [], "any other action is skipped (its inputs not even evaluated)"
    with pytest.raises(AssertionError, match="ArtifactStore"):
        run_steps([missing], env={}, contexts={"runner.temp": "/x"}, cwd=tmp_path, bin_dir=bin_dir())
    with pytest.raises(AssertionError, match=r"runner\.tmp"):
        _run(tmp_path, store, [{"uses": UPLOAD, "with": {"name": "b", "path": "${{ runner.tmp }}/x"}}])


def test_the_agent_artifact_keeps_gh_aws_layout(tmp_path: Path) -> None:
    """gh-aw's multi-path upload (common root /tmp/gh-aw kept, globs, hidden files left out), downloaded where the
    compiler has a custom job look for it: ``$RUNNER_TEMP/gh-aw/safe-jobs/agent_output.json`` and ``agent/``."""
    store = ArtifactStore(tmp_path / "artifacts")
    gh_aw, work = tmp_path / "gh-aw", tmp_path / "work"
    for rel in ("agent_output.json", "safeoutputs.jsonl", "agent/statefile/memory.md", "agent/notes.txt",
                "agent/.hidden/secret", "aw-1.patch", "unrelated.txt", "mcp-logs/x.log"):  # fmt: skip
        (gh_aw / rel).parent.mkdir(parents=True, exist_ok=True)
        (gh_aw / rel).write_text(rel)
    work.mkdir()
    runs = run_steps([UPLOAD_AGENT_ARTIFACTS], env={"GITHUB_RUN_ATTEMPT": "1"}, contexts={}, cwd=work,
                     bin_dir=bin_dir(), path_map={"/tmp/gh-aw": str(gh_aw)}, artifacts=store)  # fmt: skip
    assert runs[0].returncode == 0, runs[0].stderr
    assert sorted(store.files("agent")) == ["agent/notes.txt", "agent/statefile/memory.md", "agent_output.json",
                                            "aw-1.patch", "mcp-logs/x.log", "safeoutputs.jsonl"]  # fmt: skip
    job = {"steps": [{"name": "show", "run": 'cat "$GH_AW_AGENT_OUTPUT"'}]}
    temp = tmp_path / "job-temp"
    runs = run_steps(compiled_safe_job(job), env={"GITHUB_RUN_ATTEMPT": "1"}, contexts={"runner.temp": str(temp)},
                     cwd=work, bin_dir=bin_dir(), artifacts=store)  # fmt: skip
    assert [r.returncode for r in runs] == [0, 0] and runs[1].stdout == "agent_output.json"
    assert (temp / "gh-aw" / "safe-jobs" / "agent" / "notes.txt").is_file()


LOSSLESS = "---\non: {}\nimports:\n  - shared/statefile.md\n---\n"


def _one_run(tmp_path: Path) -> tuple[World, Any]:
    world = World(tmp_path, "lossless", LOSSLESS, {"perf": PERF})
    world.seed_memory({"perf.md": synthetic_state("perf", 3, seed=5)})
    run = world.new_run()
    assert run.pre_steps()
    run.agent({"status": "accepted", "metric": "90", "notes": "faster"})
    run.after_agent()
    return world, run


def test_without_the_context_artifact_the_job_writes_nothing(tmp_path: Path) -> None:
    """No statefile-context artifact in the run (lost, or a workflow without the component's upload step): the
    job's download fails, so apply never runs, and the branch is as it was."""
    world, run = _one_run(tmp_path)
    shutil.rmtree(run.artifacts.root / CONTEXT_ARTIFACT)
    before = world.branch_files()
    run.safe_output_job()
    assert run.job_returncode == 1 and f"Artifact not found for name: {CONTEXT_ARTIFACT}" in run.job_stderr
    assert not any(" apply" in s.name or "Record" in s.name for s in run.job_steps), [s.name for s in run.job_steps]
    assert world.branch_files() == before


def test_a_context_from_the_agents_artifact_is_refused(tmp_path: Path) -> None:
    """Why the path matters: had the job read the context the agent's artifact carries (where version 1 travelled),
    the agent's own file would decide what is recorded.  apply refuses any context inside that artifact."""
    world, run = _one_run(tmp_path)
    forged = json.loads(run.artifacts.files(CONTEXT_ARTIFACT)[CONTEXT_FILE])
    forged.update(metric_direction="higher", target_metric="1")
    (run.gh_aw / "agent" / "statefile" / CONTEXT_FILE).write_text(json.dumps(forged))
    run.output = None
    shutil.rmtree(run.artifacts.root / "agent")
    run.after_agent()  # the agent artifact now carries the forged file
    frontmatter, _ = load_component()
    job = copy.deepcopy(frontmatter["safe-outputs"]["jobs"][JOB_ID])
    [apply] = [s for s in job["steps"] if " apply " in s.get("run", "")]
    apply["run"] = apply["run"].replace(
        "$RUNNER_TEMP/statefile-context/", "$RUNNER_TEMP/gh-aw/safe-jobs/agent/statefile/"
    )
    before = world.branch_files()
    temp = run.job_temp()
    (tmp_path / "empty").mkdir()
    runs = run_steps(compiled_safe_job(job), env=run.env(temp), contexts=run.contexts(temp), cwd=tmp_path / "empty",
                     bin_dir=bin_dir(), artifacts=run.artifacts)  # fmt: skip
    [applied] = [r for r in runs if r.name == apply["name"]]
    assert applied.returncode == 2 and "inside the agent's artifact" in applied.stderr, applied.stderr
    assert world.branch_files() == before


# -- the agent's read tools (mcp-scripts) ---------------------------------------------------------------------------

_INPUT_USE = re.compile(r"\$\{?INPUT_([A-Z0-9_]+)")
_QUOTED_INPUT = re.compile(r'"\$(?:INPUT_[A-Z0-9_]+|\{INPUT_[A-Z0-9_]+(?::-[0-9a-z]*)?\})"')


def test_the_read_tools_are_declared_as_mcp_scripts_with_the_names_the_view_uses(
    component: tuple[dict[str, Any], str],
) -> None:
    frontmatter, body = component
    tools = frontmatter["mcp-scripts"]
    assert sorted(name.replace("-", "_") for name in tools) == sorted(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool["description"].strip() and isinstance(tool["timeout"], int) and tool["timeout"] <= 60, name
        assert set(tool) <= {"description", "inputs", "run", "timeout"}, f"{name}: no env (no secret), no script"
        for spec in (tool.get("inputs") or {}).values():
            assert spec["type"] in ("string", "number") and spec["description"].strip(), name
        assert f"`{name.replace('-', '_')}(" in body, f"the prompt does not show how to call {name}"


def test_the_read_tools_pass_inputs_as_quoted_arguments_and_read_the_clone_read_only(
    component: tuple[dict[str, Any], str],
) -> None:
    frontmatter, _ = component
    for name, tool in frontmatter["mcp-scripts"].items():
        script = tool["run"]
        assert "${{" not in script and "secrets" not in script and "TOKEN" not in script, name
        used = set(_INPUT_USE.findall(script))
        assert used == {n.upper().replace("-", "_") for n in tool.get("inputs") or {}}, name
        # Every use of an input is one whole double-quoted word (never bare, never inside eval or another string).
        assert len(_QUOTED_INPUT.findall(script)) == len(_INPUT_USE.findall(script)), script
        assert "eval" not in script and "bash -c" not in script and "sh -c" not in script
        # Free text goes after `--`, so a value starting with "-" is no option.
        for line in script.splitlines():
            if "statefile " in line:
                assert "--dir /tmp/gh-aw/repo-memory/autoloop " in line, name
        command = script[script.index("statefile --dir") :]
        assert " -- " in command and "--hints tools" in command and "--max-chars " in command, name
        assert not re.search(r"statefile[^|]*\b(record|apply|compact|edit|lesson|repair|sync|import|init)\b", command)


def test_the_read_tools_schema_check_can_fail(component: tuple[dict[str, Any], str]) -> None:
    """The two checks above fail on the mistakes they are for."""
    frontmatter, _ = component
    unquoted = frontmatter["mcp-scripts"]["statefile-search"]["run"].replace('"$INPUT_QUERY"', "$INPUT_QUERY")
    assert len(_QUOTED_INPUT.findall(unquoted)) < len(_INPUT_USE.findall(unquoted))
