"""Bullet-list sections (Lessons Learned, Foreclosed Avenues, Future Directions): their top-level bullets, as
:func:`statefile.model.blocks.outline` reads them, and appending to them (the rest of the section stays)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from statefile.model.blocks import ITEM, content_end, outline
from statefile.model.patterns import is_placeholder


@dataclass(frozen=True)
class Item:
    """One bullet: lines ``[start, end)`` of the section (first line is the bullet) and its text."""

    start: int
    end: int
    text: str

    @property
    def is_placeholder(self) -> bool:
        """Whether this is a template placeholder such as ``- *(none yet)*``."""
        return is_placeholder(self.text)


def items(lines: Sequence[str]) -> list[Item]:
    """The bullets of a section's lines (line 0 is the heading), in order."""
    return [
        Item(block.start, block.end, "".join(lines[block.start : block.end]))
        for block in outline("".join(lines))
        if block.kind == ITEM and not block.ordered and block.start > 0
    ]


def with_items(lines: list[str], texts: Sequence[str], newline: str) -> list[str]:
    """The lines with one ``- text`` bullet per text after the last bullet, replacing a ``*(none yet)*`` placeholder
    (one scan of the section, however many texts)."""
    new = [f"- {' '.join(text.split())}{newline}" for text in texts]
    if not new:
        return list(lines)
    found = items(lines)
    out = list(lines)
    placeholder = next((item for item in found if item.is_placeholder), None)
    if placeholder is not None:
        out[placeholder.start : placeholder.end] = new
        return out
    at = found[-1].end if found else content_end(out)  # after the last bullet, else a blank line after the content
    if at >= 1 and not out[at - 1].endswith(("\n", "\r")):
        out[at - 1] += newline
    out[at:at] = new if found else [newline, *new]
    return out
