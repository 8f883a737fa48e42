"""A new state file in the upstream template's layout: title and banner, ⚙️ Machine State, 📋 Program Info,
🎯 Current Priorities, 📚 Lessons Learned, 🚧 Foreclosed Avenues, 🔭 Future Directions, 📊 Iteration History."""

from __future__ import annotations

from typing import Any

from statefile.model.machine_state import CANONICAL_ROWS, cell_text, field_key, label_for
from statefile.model.text import one_line

# The template's fixed lines, named so that fixtures and tests that want the exact upstream wording can reuse them.
BANNER = "🤖 *This file is maintained by the Autoloop agent. Maintainers may freely edit any section.*"
MACHINE_STATE_NOTE = (
    "> 🤖 *Updated automatically after each iteration. The pre-step scheduler reads this table — keep it accurate.*"
)
NO_PRIORITIES = "*(No specific priorities set — agent is exploring freely.)*"
LESSONS_INTRO = "Key findings and insights accumulated across iterations."
FORECLOSED_INTRO = "Approaches that have been conclusively ruled out, with reasons."
FUTURE_INTRO = "Ideas for future iterations, from maintainers and the agent."
HISTORY_INTRO = "All iterations in reverse chronological order (newest first)."


def new_state_file(program: str, **fields: Any) -> str:
    """A fresh ``{program}.md``.  ``fields`` set Machine State rows by key (``metric_direction="lower"``)
    and, with ``goal=``/``metric=``, the Program Info lines."""
    goal = one_line(str(fields.pop("goal", None) or "")) or "*(describe the goal)*"
    metric_name = one_line(str(fields.pop("metric", None) or "")) or "*(metric name)*"
    values: dict[str, Any] = {
        "last_run": None,
        "iteration_count": 0,
        "best_metric": None,
        "target_metric": None,
        "metric_direction": "higher",
        "branch": f"`autoloop/{program}`",
        "pr": None,
        "issue": None,
        "paused": False,
        "pause_reason": None,
        "completed": False,
        "completed_reason": None,
        "consecutive_errors": 0,
        "recent_statuses": None,
    }
    for name, value in fields.items():
        values[field_key(label_for(name))] = value
    labels = {field_key(label): label for label in CANONICAL_ROWS}
    rows = [f"| {labels.get(key) or label_for(key)} | {cell_text(value)} |" for key, value in values.items()]
    direction = values["metric_direction"] or "higher"
    issue = cell_text(values["issue"])
    pr = cell_text(values["pr"])
    return "\n".join(
        [
            f"# Autoloop: {program}",
            "",
            BANNER,
            "",
            "---",
            "",
            "## ⚙️ Machine State",
            "",
            MACHINE_STATE_NOTE,
            "",
            "| Field | Value |",
            "|-------|-------|",
            *rows,
            "",
            "---",
            "",
            "## 📋 Program Info",
            "",
            f"**Goal**: {goal}",
            f"**Metric**: {metric_name} ({direction} is better)",
            f"**Branch**: [`autoloop/{program}`](../../tree/autoloop/{program})",
            f"**Pull Request**: {pr}",
            f"**Issue**: {issue}",
            "",
            "---",
            "",
            "## 🎯 Current Priorities",
            "",
            "<!-- Maintainers: add priorities here to steer the agent. The agent reads this before each iteration. -->",
            "",
            NO_PRIORITIES,
            "",
            "---",
            "",
            "## 📚 Lessons Learned",
            "",
            LESSONS_INTRO,
            "",
            "- *(none yet)*",
            "",
            "---",
            "",
            "## 🚧 Foreclosed Avenues",
            "",
            FORECLOSED_INTRO,
            "",
            "- *(none yet)*",
            "",
            "---",
            "",
            "## 🔭 Future Directions",
            "",
            FUTURE_INTRO,
            "",
            "- *(none yet)*",
            "",
            "---",
            "",
            "## 📊 Iteration History",
            "",
            HISTORY_INTRO,
            "",
            "<!-- New entries are prepended below this line -->",
            "",
            "*(No iterations yet.)*",
            "",
        ]
    )
