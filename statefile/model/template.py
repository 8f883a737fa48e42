"""The upstream template: its sections (the known kinds and how a heading is recognised), layout and words."""

from __future__ import annotations

from typing import Any

from statefile.model.machine_state import CANONICAL_ROWS, cell_text, field_key, label_for
from statefile.model.patterns import is_entry_heading, section_name
from statefile.model.text import one_line

# Known sections: kind → (canonical heading, names); a heading is of a kind when its section_name starts with one
# of the names as whole words, the longest name across all kinds first.
SECTION_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "machine_state": ("## ⚙️ Machine State", ("machine state", "scheduler state")),
    "program_info": ("## 📋 Program Info", ("program info", "program information", "program details")),
    "priorities": ("## 🎯 Current Priorities", ("current priorities", "priorities", "current focus")),
    "lessons": (
        "## 📚 Lessons Learned",
        ("lessons learned", "lessons", "key lessons", "key learnings", "learnings", "lessons and insights"),
    ),
    "foreclosed": (
        "## 🚧 Foreclosed Avenues",
        ("foreclosed avenues", "foreclosed", "ruled out avenues", "ruled out", "dead ends"),
    ),
    "future": ("## 🔭 Future Directions", ("future directions", "future work", "future ideas", "next steps")),
    "history": (
        "## 📊 Iteration History",
        ("iteration history", "history", "iteration log", "iterations", "recent iterations", "iteration record"),
    ),
}
# Sections a maintainer owns: compaction never changes them.
MAINTAINER_OWNED: frozenset[str] = frozenset({"title", "preamble", "program_info", "priorities", "future", "other"})
# (name, kind), longest name first: the most specific name decides.
_NAMES = sorted(
    ((name, kind) for kind, (_, names) in SECTION_KINDS.items() for name in names), key=lambda p: -len(p[0])
)


def section_kind(title: str | None, level: int) -> str:
    """The kind of a section from its heading (``"other"`` for unknown ones, ``"title"`` for the ``#`` title)."""
    if title is None:
        return "preamble"
    if level == 1:
        return "title"
    if is_entry_heading(title):  # "## Iterations 1–12 — condensed": an entry written one level up
        return "other"
    key = section_name(title)
    for name, kind in _NAMES:
        if key == name or key.startswith(name + " "):
            return kind
    return "other"


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
    """A fresh ``{program}.md``: ``fields`` set Machine State rows by key, ``goal=``, ``metric=`` the Program Info."""
    goal = one_line(str(fields.pop("goal", None) or "")) or "*(describe the goal)*"
    metric_name = one_line(str(fields.pop("metric", None) or "")) or "*(metric name)*"
    values: dict[str, Any] = dict.fromkeys(map(field_key, CANONICAL_ROWS))
    values.update(iteration_count=0, metric_direction="higher", branch=f"`autoloop/{program}`", paused=False)
    values.update(completed=False, consecutive_errors=0)
    for name, value in fields.items():
        values[field_key(label_for(name))] = value
    rows = "\n".join(f"| {label_for(key)} | {cell_text(value)} |" for key, value in values.items())
    direction = values["metric_direction"] or "higher"
    bodies = {
        "machine_state": f"{MACHINE_STATE_NOTE}\n\n| Field | Value |\n|-------|-------|\n{rows}",
        "program_info": f"**Goal**: {goal}\n**Metric**: {metric_name} ({direction} is better)\n"
        f"**Branch**: [`autoloop/{program}`](../../tree/autoloop/{program})\n"
        f"**Pull Request**: {cell_text(values['pr'])}\n**Issue**: {cell_text(values['issue'])}",
        "priorities": "<!-- Maintainers: add priorities here to steer the agent. The agent reads this before each "
        f"iteration. -->\n\n{NO_PRIORITIES}",
        "lessons": f"{LESSONS_INTRO}\n\n- *(none yet)*",
        "foreclosed": f"{FORECLOSED_INTRO}\n\n- *(none yet)*",
        "future": f"{FUTURE_INTRO}\n\n- *(none yet)*",
        "history": f"{HISTORY_INTRO}\n\n<!-- New entries are prepended below this line -->\n\n*(No iterations yet.)*",
    }
    sections = [f"{SECTION_KINDS[kind][0]}\n\n{body}" for kind, body in bodies.items()]
    return "\n\n---\n\n".join([f"# Autoloop: {program}\n\n{BANNER}", *sections]) + "\n"
