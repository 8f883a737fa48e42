"""A machine-readable re-statement of gh-aw's documented schema for shared components and custom safe-output jobs.

Sources (ghaw-spec §3.5, §3.6): gh-aw's ``docs/src/content/docs/reference/custom-safe-outputs.md`` ("Job
Properties", "Input Types", "Accessing Agent Output") and ``reference/imports.md`` ("Allowed Import Fields"), and
the compiler's ``pkg/workflow/safe_jobs.go`` ``SafeJobConfig`` (fields ``name``, ``runs-on``, ``if``, ``needs``,
``steps``, ``env``, ``permissions``, ``github-token``, ``output``, ``inputs``, ``timeout-minutes``, ``artifacts``;
inputs with ``description``, ``required``, ``type``, ``default``, ``options``; the types the compiler maps to a
tool schema: ``string``, ``boolean``, ``number``, ``choice``).  :func:`validate_component` returns every problem
as one line (an empty list means the frontmatter conforms).
"""

from __future__ import annotations

import re
from typing import Any

#: Fields a shared (imported) workflow file may carry (imports.md, plus ``steps:`` which the same page documents
#: merging).  A component has no ``on:``: that is what makes it importable.
IMPORTABLE_FIELDS = frozenset({
    "import-schema", "tools", "mcp-servers", "mcp-scripts", "services", "safe-outputs", "network", "permissions",
    "runtimes", "plugins", "secret-masking", "env", "steps", "pre-agent-steps", "post-steps", "github-app",
    "checkout", "engine", "description",
})  # fmt: skip

Kind = type | tuple[type, ...]
JOB_REQUIRED: dict[str, Kind] = {"description": str, "runs-on": (str, list), "inputs": dict, "steps": list}
JOB_OPTIONAL: dict[str, Kind] = {
    "name": str,
    "output": str,
    "needs": (str, list),
    "permissions": dict,
    "env": dict,
    "if": str,
    "timeout-minutes": int,
    "artifacts": list,
    "github-token": str,
    "max": int,
}
INPUT_FIELDS: dict[str, Kind] = {
    "description": str,
    "required": bool,
    "type": str,
    "default": (str, int, float, bool),
    "options": list,
}
INPUT_TYPES = frozenset({"string", "boolean", "number", "choice"})
PERMISSION_LEVELS = frozenset({"read", "write", "none"})
STEP_FIELDS = frozenset({"name", "id", "if", "uses", "run", "with", "env", "shell", "continue-on-error",
                         "working-directory", "timeout-minutes"})  # fmt: skip
#: Job ids: lower-case, no dots (the tool name is the id lower-cased with '-' → '_'; a job id with capitals or
#: dots makes the tool and the item type disagree).
JOB_ID = re.compile(r"^[a-z][a-z0-9-]*$")


def tool_name(job_id: str) -> str:
    """The tool the agent sees and the item ``type`` it produces: ``record-iteration`` → ``record_iteration``."""
    return job_id.replace("-", "_")


def _type_ok(value: Any, kind: type | tuple[type, ...]) -> bool:
    if kind is int or (isinstance(kind, tuple) and int in kind and bool not in kind):
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(kind, tuple) and isinstance(value, kind) and not isinstance(value, bool)
        )
    return isinstance(value, kind)


def validate_steps(steps: Any, where: str) -> list[str]:
    problems: list[str] = []
    if not isinstance(steps, list) or not steps:
        return [f"{where}: must be a non-empty list of steps"]
    for index, step in enumerate(steps):
        at = f"{where}[{index}]"
        if not isinstance(step, dict):
            problems.append(f"{at}: a step must be a mapping")
            continue
        unknown = set(step) - STEP_FIELDS
        if unknown:
            problems.append(f"{at}: unknown step keys {sorted(unknown)}")
        if ("run" in step) == ("uses" in step):
            problems.append(f"{at}: a step has exactly one of 'run' and 'uses'")
        if "run" in step and not isinstance(step["run"], str):
            problems.append(f"{at}.run: must be a string")
        if "env" in step and not (isinstance(step["env"], dict) and all(isinstance(k, str) for k in step["env"])):
            problems.append(f"{at}.env: must map names to values")
    return problems


def validate_job(job_id: str, job: Any) -> list[str]:
    where = f"safe-outputs.jobs.{job_id}"
    problems: list[str] = []
    if not JOB_ID.match(job_id):
        problems.append(f"{where}: job ids are lower-case letters, digits and '-' (no dots)")
    if not isinstance(job, dict):
        return [*problems, f"{where}: must be a mapping"]
    for key, kind in JOB_REQUIRED.items():
        if key not in job:
            problems.append(f"{where}: '{key}' is required")
        elif not _type_ok(job[key], kind):
            problems.append(f"{where}.{key}: wrong type")
    for key, value in job.items():
        if key in JOB_REQUIRED:
            continue
        if key not in JOB_OPTIONAL:
            problems.append(f"{where}: unknown key '{key}'")
        elif not _type_ok(value, JOB_OPTIONAL[key]):
            problems.append(f"{where}.{key}: wrong type")
    for scope, level in (job.get("permissions") or {}).items():
        if level not in PERMISSION_LEVELS:
            problems.append(f"{where}.permissions.{scope}: must be read, write or none")
    inputs = job.get("inputs")
    if isinstance(inputs, dict):
        if not inputs:
            problems.append(f"{where}.inputs: a job needs at least one input")
        for name, spec in inputs.items():
            at = f"{where}.inputs.{name}"
            if not re.fullmatch(r"[a-z][a-z0-9_]*", str(name)):
                problems.append(f"{at}: input names are lower-case identifiers")
            if not isinstance(spec, dict):
                problems.append(f"{at}: must be a mapping")
                continue
            for key, value in spec.items():
                if key not in INPUT_FIELDS:
                    problems.append(f"{at}: unknown key '{key}'")
                elif not isinstance(value, INPUT_FIELDS[key]):
                    problems.append(f"{at}.{key}: wrong type")
            if "description" not in spec:
                problems.append(f"{at}: 'description' is required (the agent sees it)")
            kind = spec.get("type", "string")
            if kind not in INPUT_TYPES:
                problems.append(f"{at}.type: '{kind}' is not one of {sorted(INPUT_TYPES)}")
            if kind == "choice" and not spec.get("options"):
                problems.append(f"{at}: a choice input needs options")
            if "options" in spec and kind != "choice":
                problems.append(f"{at}: options only go with type choice")
            if spec.get("default") is not None and not spec.get("default"):
                problems.append(f"{at}: a falsy default is dropped by gh-aw's ingestion; omit it")
    if "steps" in job:
        problems.extend(validate_steps(job["steps"], f"{where}.steps"))
    return problems


def validate_component(frontmatter: Any) -> list[str]:
    """Every way ``frontmatter`` departs from an importable component with custom safe-output jobs."""
    if not isinstance(frontmatter, dict):
        return ["frontmatter: must be a mapping"]
    problems: list[str] = []
    if "on" in frontmatter or True in frontmatter:
        problems.append("frontmatter: a shared component has no 'on:' (it would be a workflow, not importable)")
    for key in frontmatter:
        if key not in IMPORTABLE_FIELDS:
            problems.append(f"frontmatter: '{key}' is not importable (gh-aw warns and ignores it)")
    for key in ("steps", "pre-agent-steps", "post-steps"):
        if key in frontmatter:
            problems.extend(validate_steps(frontmatter[key], key))
    jobs = (frontmatter.get("safe-outputs") or {}).get("jobs")
    if jobs is not None:
        if not isinstance(jobs, dict) or not jobs:
            problems.append("safe-outputs.jobs: must map job ids to jobs")
        else:
            for job_id, job in jobs.items():
                problems.extend(validate_job(str(job_id), job))
    return problems
