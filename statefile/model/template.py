"""A new state file in the upstream template's layout: title and banner, ⚙️ Machine State, 📋 Program Info,
🎯 Current Priorities, 📚 Lessons Learned, 🚧 Foreclosed Avenues, 🔭 Future Directions, 📊 Iteration History."""

from __future__ import annotations

from typing import Any

from statefile.model.machine_state import CANONICAL_ROWS, cell_text, field_key, label_for
from statefile.model.text import one_line

# The template's fixed lines, for fixtures that want the exact upstream wording.
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
    values: dict[str, Any] = dict.fromkeys(map(field_key, CANONICAL_ROWS))
    values.update(iteration_count=0, metric_direction="higher", branch=f"`autoloop/{program}`", paused=False)
    values.update(completed=False, consecutive_errors=0)
    for name, value in fields.items():
        values[field_key(label_for(name))] = value
    labels = {field_key(label): label for label in CANONICAL_ROWS}
    rows = "\n".join(f"| {labels.get(key) or label_for(key)} | {cell_text(value)} |" for key, value in values.items())
    direction = values["metric_direction"] or "higher"
    return f"""# Autoloop: {program}

{BANNER}

---

## ⚙️ Machine State

{MACHINE_STATE_NOTE}

| Field | Value |
|-------|-------|
{rows}

---

## 📋 Program Info

**Goal**: {goal}
**Metric**: {metric_name} ({direction} is better)
**Branch**: [`autoloop/{program}`](../../tree/autoloop/{program})
**Pull Request**: {cell_text(values["pr"])}
**Issue**: {cell_text(values["issue"])}

---

## 🎯 Current Priorities

<!-- Maintainers: add priorities here to steer the agent. The agent reads this before each iteration. -->

{NO_PRIORITIES}

---

## 📚 Lessons Learned

{LESSONS_INTRO}

- *(none yet)*

---

## 🚧 Foreclosed Avenues

{FORECLOSED_INTRO}

- *(none yet)*

---

## 🔭 Future Directions

{FUTURE_INTRO}

- *(none yet)*

---

## 📊 Iteration History

{HISTORY_INTRO}

<!-- New entries are prepended below this line -->

*(No iterations yet.)*
"""
