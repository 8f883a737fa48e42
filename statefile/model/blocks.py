"""The one markdown scanner: markdown-it-py's block rules, so a ``## `` inside a code fence or HTML block is text.

:func:`scan_blocks` reads a whole file fast (only the rules that decide where a top-level ATX heading can be);
:func:`outline` reads a short text (a section, an entry) with lists and quotes too.  Setext headings are off (a
``---`` under a paragraph is a divider in these files), tables too (Machine State rows are read line by line).
Line numbers are 0-based and agree with :func:`statefile.model.text.split_lines`.
"""

from __future__ import annotations

import gc
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


@dataclass(frozen=True)
class Heading:
    """A top-level ATX heading: its 0-based line, level (1-6) and text."""

    line: int
    level: int
    text: str


@dataclass(frozen=True)
class BlockScan:
    """Headings in file order, and the line ranges ``[start, end)`` of code and HTML blocks."""

    headings: tuple[Heading, ...]
    code_ranges: tuple[tuple[int, int], ...]


#: Kinds of :class:`Block`.
HEADING, PARAGRAPH, ITEM, FENCE = "heading", "paragraph", "item", "fence"
CODE, HTML, RULE, QUOTE = "code", "html", "rule", "quote"


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


def _normalized(text: str) -> str:
    # markdown-it's own 'normalize' rule, which calling the block parser directly skips; a BOM would hide a heading.
    src = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    return src[1:] if src.startswith("\ufeff") else src


_gc_lock = threading.Lock()
_gc_state = {"depth": 0, "was_enabled": False}


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic collector off while any thread parses; the last one out restores it (MCP worker threads)."""
    with _gc_lock:
        if _gc_state["depth"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["depth"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["depth"] -= 1
            if _gc_state["depth"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


def _tokens(md: MarkdownIt, text: str) -> list[Token]:
    tokens: list[Token] = []
    # A Token per block, no cycles among them: the collector's passes made a 4 MB history's scan superlinear.
    with _collector_paused():
        md.block.parse(_normalized(text), md, {}, tokens)
    return tokens


def scan_blocks(text: str) -> BlockScan:
    """Scan ``text`` for top-level ATX headings and code/HTML block ranges (line numbers match split_lines)."""
    tokens = _tokens(_parser(False), text)
    headings: list[Heading] = []
    code: list[tuple[int, int]] = []
    for index, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None and tok.level == 0:
            inline = tokens[index + 1]
            headings.append(Heading(tok.map[0], int(tok.tag[1:]), inline.content.strip()))
        elif tok.type in ("fence", "code_block", "html_block") and tok.map is not None:
            code.append((tok.map[0], tok.map[1]))
    return BlockScan(tuple(headings), tuple(code))


class _OutlineCache:
    """Outlines by text, LRU, bounded by the texts' total length (a server lives long); thread-safe."""

    def __init__(self, max_chars: int, max_text: int) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, bool], tuple[Block, ...]] = OrderedDict()
        self.chars = 0
        self.max_chars = max_chars
        self.max_text = max_text

    def get(self, key: tuple[str, bool]) -> tuple[Block, ...] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, bool], value: tuple[Block, ...]) -> None:
        with self._lock:
            if len(key[0]) > self.max_text or key in self._items:
                return
            self._items[key] = value
            self.chars += len(key[0])
            while self.chars > self.max_chars:
                old, _ = self._items.popitem(last=False)
                self.chars -= len(old[0])


_outlines = _OutlineCache(max_chars=2_000_000, max_text=200_000)


def outline(text: str, *, lists: bool = True) -> tuple[Block, ...]:
    """The top-level blocks of a short ``text`` (a section, an entry), in order, one :data:`ITEM` per list item.

    ``lists=False`` runs only :func:`scan_blocks`'s rules (items and quotes read as paragraphs).  Cached by text.
    """
    if (found := _outlines.get((text, lists))) is None:
        found = _outline(text, lists)
        _outlines.put((text, lists), found)
    return found


def _outline(text: str, lists: bool) -> tuple[Block, ...]:
    lines = _normalized(text).removesuffix("\n").split("\n")
    blocks: list[Block] = []
    tokens = _tokens(_parser(lists), text)
    ordered = False
    for index, tok in enumerate(tokens):
        if tok.map is None:
            continue
        start, end = tok.map
        if tok.level == 0:
            kind = _KINDS.get(tok.type)
            if tok.type in ("bullet_list_open", "ordered_list_open"):
                ordered = tok.type == "ordered_list_open"
                continue
            if kind is None:
                continue
            level = int(tok.tag[1:]) if kind == HEADING else 0
            label = tokens[index + 1].content.strip() if kind == HEADING else tok.info.strip()
            last = lines[end - 1].strip() if kind == FENCE and end - 1 > start else ""  # a fence's closing line
            closed = kind != FENCE or (last.startswith(tok.markup) and not last.strip(tok.markup[0]))
            blocks.append(Block(kind, start, _trim(lines, start, end), level, label, closed=closed))
        elif tok.level == 1 and tok.type == "list_item_open":
            blocks.append(Block(ITEM, start, _trim(lines, start, end), ordered=ordered))
    return tuple(blocks)


_KINDS = {"heading_open": HEADING, "paragraph_open": PARAGRAPH, "fence": FENCE, "code_block": CODE,
          "html_block": HTML, "hr": RULE, "blockquote_open": QUOTE}  # fmt: skip


def _trim(lines: list[str], start: int, end: int) -> int:
    end = min(end, len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def content_end(lines: Sequence[str]) -> int:
    """The index just past a section's last line of content (at least 1: line 0 is its heading); trailing blank
    lines and rules (``---``, the agents' section separator) are not content, a ``---`` in a fence is."""
    end = next((block.end for block in reversed(outline("".join(lines), lists=False)) if block.kind != RULE), 0)
    return max(end, min(1, len(lines)))


# Level 1-2 ATX headings and every line that could open a fence or HTML block, for read_machine_state alone: with
# _heading_parser's rules only such a block can hide or fake a heading, so at one the caller uses scan_blocks.
_TOP_HEADING_LINE = re.compile(r"^ {0,3}(?:(#{1,2})(?=[ \t\r\n]|$)([^\r\n]*)|```|~~~|<)", re.MULTILINE)


def top_heading_lines(text: str) -> Iterator[tuple[int, int, str]]:
    """Level 1-2 ATX heading lines as ``(offset, level, text)`` without markdown-it; a line that could open a fence
    or HTML block comes as ``(offset, 0, "")``, where the caller must use :func:`scan_blocks` instead."""
    for match in _TOP_HEADING_LINE.finditer(text):  # no marks: a line that could open a block, level 0
        yield match.start(), len(match.group(1) or ""), (match.group(2) or "").strip()
