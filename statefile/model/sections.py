"""The sections a state file is made of: the known kinds, how a heading is recognised, and a section's lines."""

from __future__ import annotations

from dataclasses import dataclass

from statefile.model.patterns import is_entry_heading, section_name
from statefile.model.text import utf8_size

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
CANONICAL_ORDER: tuple[str, ...] = tuple(SECTION_KINDS)
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


@dataclass(frozen=True)
class Section:
    """A run of lines from one top-level heading to the next (the preamble has no heading)."""

    kind: str
    title: str | None
    level: int
    start: int
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """The section's text exactly as in the file."""
        return "".join(self.lines)

    @property
    def size(self) -> int:
        """UTF-8 bytes of the section."""
        return utf8_size(self.text)
