"""The one markdown scanner: markdown-it-py's block rules, so a ``## `` inside a code fence or HTML block is text.
Setext headings (a ``---`` under a paragraph is a divider here) and tables are off; line numbers are 0-based, as in
:func:`statefile.model.text.split_lines`."""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


#: Kinds of :class:`Block`: an item, or the type of markdown-it's token less ``_open``.
HEADING, PARAGRAPH, ITEM, FENCE = "heading", "paragraph", "item", "fence"
CODE, HTML, RULE, QUOTE = "code_block", "html_block", "hr", "blockquote"
_KINDS = {HEADING, PARAGRAPH, FENCE, CODE, HTML, RULE, QUOTE}


@dataclass(frozen=True)
class Block:
    """One top-level block: its kind, lines ``[start, end)`` (no trailing blank lines), a heading's level and text
    or a fence's info string, whether an item is in a numbered list and whether a fence has its closing line."""

    kind: str
    start: int
    end: int
    level: int = 0
    text: str = ""
    ordered: bool = False
    closed: bool = True


@lru_cache(maxsize=2)
def _parser(lists: bool) -> MarkdownIt:
    """Without ``lists``: only the rules that decide where a top-level ATX heading is (six times faster)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(
        ["table", "reference", "lheading", *([] if lists else ["blockquote", "list"])]
    )


_gc_lock = threading.Lock()
_gc_was_enabled: list[bool] = []  # one per parse under way: whether the collector was on before the first began


def scan_blocks(text: str) -> tuple[Block, ...]:
    """The top-level blocks of a whole file: :func:`outline` without lists, never cached (files are large)."""
    return _outline(text, False)


# Outlines by text, least recently used first, bounded by the texts' total length (a server lives long).
_outlines: OrderedDict[tuple[str, bool], tuple[Block, ...]] = OrderedDict()
_outlines_lock = threading.Lock()
_cached_chars = 0
MAX_CACHED_CHARS, MAX_CACHED_TEXT = 2_000_000, 200_000


def outline(text: str, *, lists: bool = True) -> tuple[Block, ...]:
    """The top-level blocks of a short ``text``, one :data:`ITEM` per list item (none with ``lists=False``)."""
    key = (text, lists)
    with _outlines_lock:
        if (found := _outlines.get(key)) is not None:
            _outlines.move_to_end(key)
            return found
    found = _outline(text, lists)
    global _cached_chars
    with _outlines_lock:
        if len(text) <= MAX_CACHED_TEXT and key not in _outlines:
            _outlines[key] = found
            _cached_chars += len(text)
        while _cached_chars > MAX_CACHED_CHARS:
            _cached_chars -= len(_outlines.popitem(last=False)[0][0])
    return found


def _outline(text: str, lists: bool) -> tuple[Block, ...]:
    # markdown-it's own 'normalize' rule, which calling the block parser directly skips; a BOM would hide a heading.
    src = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd").removeprefix("\ufeff")
    md = _parser(lists)
    tokens: list[Token] = []
    # A Token per block, no cycles among them: the collector's passes made a 4 MB history's scan superlinear.  It is
    # off while any thread parses (MCP worker threads); the last one out restores it.
    with _gc_lock:
        _gc_was_enabled.append(_gc_was_enabled[0] if _gc_was_enabled else gc.isenabled())
        gc.disable()
    try:
        md.block.parse(src, md, {}, tokens)
    finally:
        with _gc_lock:
            if _gc_was_enabled.pop() and not _gc_was_enabled:
                gc.enable()
    lines = src.removesuffix("\n").split("\n")
    blocks: list[Block] = []
    ordered = False
    for index, tok in enumerate(tokens):
        if tok.map is None:
            continue
        start, end = tok.map
        if tok.level == 0 and tok.type in ("bullet_list_open", "ordered_list_open"):
            ordered = tok.type == "ordered_list_open"
        elif tok.level == 1 and tok.type == "list_item_open":
            blocks.append(Block(ITEM, start, _trim(lines, start, end), ordered=ordered))
        elif tok.level == 0 and (kind := tok.type.removesuffix("_open")) in _KINDS:
            level = int(tok.tag[1:]) if kind == HEADING else 0
            label = tokens[index + 1].content.strip() if kind == HEADING else tok.info.strip()
            last = lines[end - 1].strip() if kind == FENCE and end - 1 > start else ""  # a fence's closing line
            closed = kind != FENCE or (last.startswith(tok.markup) and not last.strip(tok.markup[0]))
            blocks.append(Block(kind, start, _trim(lines, start, end), level, label, closed=closed))
    return tuple(blocks)


def _trim(lines: list[str], start: int, end: int) -> int:
    end = min(end, len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def content_end(lines: Sequence[str]) -> int:
    """The index past a section's last content line (at least 1: the heading); trailing blanks and rules are none."""
    end = next((block.end for block in reversed(outline("".join(lines), lists=False)) if block.kind != RULE), 0)
    return max(end, min(1, len(lines)))
