"""Find headings with markdown-it-py block tokens, so a ``## `` inside a code fence or HTML block is just text.

Only the block rules that decide where a heading can be are enabled (code, fence, html_block, heading, hr,
paragraph): lists, quotes, tables and references cannot create or hide an ATX heading at the top level, and skipping
them makes a 4 MB file parse about six times faster (DESIGN.md).  Setext headings are off on purpose: a ``---`` rule
under a paragraph is a section divider in these files, never a heading.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


@dataclass(frozen=True)
class Heading:
    """An ATX heading found at the top level: its 0-based line, level (1-6) and text."""

    line: int
    level: int
    text: str


@dataclass(frozen=True)
class BlockScan:
    """Headings in file order, and the line ranges ``[start, end)`` of code and HTML blocks."""

    headings: tuple[Heading, ...]
    code_ranges: tuple[tuple[int, int], ...]


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.disable(["table", "blockquote", "list", "reference", "lheading"])
    return md


def scan_blocks(text: str) -> BlockScan:
    """Scan ``text`` for top-level ATX headings and code/HTML block ranges (line numbers match split_lines)."""
    md = _parser()
    # The same normalization markdown-it's core 'normalize' rule does, done here because we call the block parser
    # directly (skipping inline parsing, which we do not need).  A leading BOM would hide a first-line heading.
    src = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    if src.startswith("\ufeff"):
        src = src[1:]
    tokens: list = []  # type: ignore[type-arg]
    # markdown-it allocates a Token per block: on a 4 MB history that is a few hundred thousand objects, and the
    # cyclic collector's passes over them made the scan superlinear (10,000 entries: 390 ms with, 280 ms without).
    # Nothing here forms cycles; the collector is back on (if it was on) before anything else runs.
    collecting = gc.isenabled()
    gc.disable()
    try:
        md.block.parse(src, md, {}, tokens)
    finally:
        if collecting:
            gc.enable()
    headings: list[Heading] = []
    code: list[tuple[int, int]] = []
    pending_level = 0
    for index, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None and tok.level == 0:
            pending_level = int(tok.tag[1:])
            inline = tokens[index + 1]
            headings.append(Heading(tok.map[0], pending_level, inline.content.strip()))
        elif tok.type in ("fence", "code_block", "html_block") and tok.map is not None:
            code.append((tok.map[0], tok.map[1]))
    return BlockScan(tuple(headings), tuple(code))
