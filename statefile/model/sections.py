"""The sections a state file is made of: the known kinds, how a heading is recognised, and a section's lines."""

from __future__ import annotations

from dataclasses import dataclass

from statefile.model.text import heading_key, utf8_size

# Known sections: kind → (canonical heading, aliases matched against the normalized heading key).
SECTION_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "machine_state": ("## ⚙️ Machine State", ("machine state",)),
    "program_info": ("## 📋 Program Info", ("program info", "program information")),
    "priorities": ("## 🎯 Current Priorities", ("current priorities", "priorities")),
    "lessons": ("## 📚 Lessons Learned", ("lessons learned", "lessons")),
    "foreclosed": ("## 🚧 Foreclosed Avenues", ("foreclosed avenues", "foreclosed")),
    "future": ("## 🔭 Future Directions", ("future directions",)),
    "history": ("## 📊 Iteration History", ("iteration history", "history", "iteration log")),
}
CANONICAL_ORDER: tuple[str, ...] = tuple(SECTION_KINDS)
# Sections a maintainer owns: compaction never changes them.
MAINTAINER_OWNED: frozenset[str] = frozenset({"title", "preamble", "program_info", "priorities", "future", "other"})


def section_kind(title: str | None, level: int) -> str:
    """The kind of a section from its heading (``"other"`` for unknown ones, ``"title"`` for the ``#`` title)."""
    if title is None:
        return "preamble"
    if level == 1:
        return "title"
    key = heading_key(title)
    for kind, (_, aliases) in SECTION_KINDS.items():
        if any(key == alias or key.startswith(alias + " ") for alias in aliases):
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
