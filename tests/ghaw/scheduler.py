"""Autoloop's scheduler, re-stated: which program is due, written to ``autoloop.json``.

Follows githubnext/autoloop ``workflows/scripts/autoloop_scheduler.py`` (HEAD ``438782f``) as documented in the
team's notes (ghaw-spec §5): directory programs then bare programs (issue programs need the GitHub API and are
left out: none here), line-based frontmatter (``schedule``, ``target-metric``, ``metric_direction``), the
Machine State read with the scheduler's own regexes (:mod:`upstream`), the skip rules (completed, paused, plateau
of 5 rejections), the due check, selection of the due program with the smallest raw ``last_run`` string (never
run first), a forced selection (``AUTOLOOP_PROGRAM``, the ``program`` input of a ``workflow_dispatch``: any
configured program, paused, completed or not due — it still appears under ``skipped`` with its reason — its
target and direction read from its file), and the output keys.  Exit code 1 when nothing is selected and nothing
is unconfigured, or when the forced program does not exist or is unconfigured.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from upstream import upstream_machine_state

STATE_FILE_MAX_BYTES = 30720


def parse_schedule(text: str) -> timedelta | None:
    """``every 6h`` / ``every 30m`` / ``daily`` / ``weekly``; anything else is no schedule."""
    s = text.strip().lower()
    hours = re.match(r"every\s+(\d+)\s*h", s)
    if hours:
        return timedelta(hours=int(hours.group(1)))
    minutes = re.match(r"every\s+(\d+)\s*m", s)
    if minutes:
        return timedelta(minutes=int(minutes.group(1)))
    return {"daily": timedelta(hours=24), "weekly": timedelta(days=7)}.get(s)


@dataclass
class ProgramDefinition:
    """What the scheduler reads from a program file."""

    schedule: timedelta | None
    target: float | None
    direction: str


def parse_frontmatter(content: str) -> ProgramDefinition:
    """Line by line, not YAML: an inline ``# comment`` makes a value invalid (direction falls back to higher)."""
    stripped = re.sub(r"^(\s*<!--.*?-->\s*\n)*", "", content, flags=re.DOTALL)
    definition = ProgramDefinition(None, None, "higher")
    match = re.match(r"^---\s*\n(.*?)\n---\s*\n", stripped, re.DOTALL)
    if not match:
        return definition
    for line in match.group(1).split("\n"):
        key = line.strip()
        value = line.split(":", 1)[1].strip() if ":" in line else ""
        if key.startswith("schedule:"):
            definition.schedule = parse_schedule(value)
        if key.startswith("target-metric:"):
            with contextlib.suppress(ValueError):
                definition.target = float(value)
        if key.startswith(("metric_direction:", "metric-direction:")):
            word = value.strip('"').strip("'").lower()
            if word in ("higher", "lower"):
                definition.direction = word
    return definition


def is_unconfigured(content: str) -> bool:
    return "<!-- AUTOLOOP:UNCONFIGURED -->" in content or re.search(r"\bTODO\b|\bREPLACE", content) is not None


def skip_reason(state: dict[str, Any]) -> str | None:
    if str(state.get("completed", "")).lower() == "true" or state.get("completed") is True:
        return "completed: target metric reached"
    if state.get("paused"):
        return f"paused: {state.get('pause_reason', 'unknown')}"
    recent = state.get("recent_statuses", [])[-5:]
    if len(recent) >= 5 and all(s == "rejected" for s in recent):
        return "plateau: 5 consecutive rejections"
    return None


def program_files(workspace: Path) -> list[str]:
    """Directory programs (``<name>/program.md``), then bare ``*.md``, as paths relative to the workspace."""
    root = workspace / ".autoloop" / "programs"
    found: list[str] = []
    if root.is_dir():
        for entry in sorted(p.name for p in root.iterdir()):
            if (root / entry).is_dir() and (root / entry / "program.md").is_file():
                found.append(f".autoloop/programs/{entry}/program.md")
        found.extend(f".autoloop/programs/{p.name}" for p in sorted(root.glob("*.md")))
    return found


def program_name(path: str) -> str:
    return path.rsplit("/", 2)[-2] if path.endswith("/program.md") else Path(path).stem


def run_scheduler(
    workspace: Path, memory_dir: Path, output: Path, *, now: datetime, forced: str | None = None
) -> tuple[int, dict[str, Any]]:
    """Run the scheduler: write ``output`` (autoloop.json) and return (exit code, the JSON written).

    ``forced`` is ``AUTOLOOP_PROGRAM`` (a manual dispatch naming a program)."""
    files = program_files(workspace)
    output.parent.mkdir(parents=True, exist_ok=True)
    if not files:
        data: dict[str, Any] = {"due": [], "skipped": [], "unconfigured": [], "no_programs": True,
                                "head_branch": None, "existing_pr": None}  # fmt: skip
        output.write_text(json.dumps(data))
        return 0, data
    due: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    unconfigured: list[str] = []
    definitions: dict[str, tuple[str, ProgramDefinition]] = {}
    for path in files:
        name = program_name(path)
        content = (workspace / path).read_text()
        if is_unconfigured(content):
            unconfigured.append(name)
            continue
        definition = parse_frontmatter(content)
        definitions[name] = (path, definition)
        state_file = memory_dir / f"{name}.md"
        state = upstream_machine_state(state_file.read_text(encoding="utf-8")) if state_file.is_file() else {}
        raw_last = state.get("last_run")
        last_run = None
        if raw_last:
            try:
                last_run = datetime.fromisoformat(raw_last.replace("Z", "+00:00"))
            except ValueError:
                last_run = None
        reason = skip_reason(state)
        if reason:
            skipped.append({"name": name, "reason": reason})
            continue
        # A naive Last Run makes this subtraction raise TypeError: the real scheduler crashes there too.
        if definition.schedule and last_run and now - last_run < definition.schedule:
            skipped.append({"name": name, "reason": "not due yet",
                            "next_due": (last_run + definition.schedule).isoformat()})  # fmt: skip
            continue
        due.append({"name": name, "last_run": raw_last, "file": path, "target_metric": definition.target,
                    "metric_direction": definition.direction})  # fmt: skip
    selected = selected_file = target = None
    direction = "higher"
    deferred: list[str] = []
    if forced:
        if forced not in definitions:  # unknown or unconfigured: the real scheduler prints why and exits 1
            return 1, {}
        selected, (selected_file, definition) = forced, definitions[forced]
        target, direction = definition.target, definition.direction
        deferred = [p["name"] for p in due if p["name"] != forced]
    elif due:
        ordered = sorted(due, key=lambda p: p["last_run"] or "")
        first = ordered[0]
        selected, selected_file, target = first["name"], first["file"], first["target_metric"]
        direction = first["metric_direction"] or "higher"
        deferred = [p["name"] for p in ordered[1:]]
    size = 0
    if selected and (memory_dir / f"{selected}.md").is_file():
        size = (memory_dir / f"{selected}.md").stat().st_size
    data = {
        "selected": selected,
        "selected_file": selected_file,
        "selected_issue": None,
        "selected_target_metric": target,
        "selected_metric_direction": direction,
        "state_file_size_bytes": size,
        "state_file_max_bytes": STATE_FILE_MAX_BYTES,
        "issue_programs": {},
        "deferred": deferred,
        "skipped": skipped,
        "unconfigured": unconfigured,
        "no_programs": False,
        "head_branch": f"autoloop/{selected}" if selected else None,
        "existing_pr": None,
    }
    output.write_text(json.dumps(data, indent=2))
    return (1 if not selected and not unconfigured else 0), data
