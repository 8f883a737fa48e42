"""The one markdown scanner: markdown-it-py's block rules, so a ``## `` inside a code fence or HTML block is text.

Every module that needs to know where headings, code, list items, paragraphs or rules are asks this module; none
matches them with a regular expression of its own.  Two views of the same parser:

- :func:`scan_blocks` reads a whole file, fast: only the block rules that decide where a top-level ATX heading can
  be are enabled (code, fence, html_block, heading, hr, paragraph).  Lists, quotes, tables and references cannot
  create or hide an ATX heading at the top level, and skipping them makes a 4 MB file parse about six times faster
  (0.54 s instead of 3.3 s for the block rules of a 10,000-entry history, measured on these machines).
- :func:`outline` reads a short text (a section, an entry) with lists and block quotes on as well, and returns its
  top-level blocks: headings, paragraphs, list items (each item one block), code, HTML, rules and quotes.

Setext headings are off in both on purpose: a ``---`` rule under a paragraph is a section divider in these files,
never a heading.  Tables are off: a Machine State table is read row by row the way the upstream scheduler reads it
(:mod:`statefile.model.machine_state`).  Line numbers are 0-based and agree with
:func:`statefile.model.text.split_lines` (``\\r\\n``, ``\\r`` and ``\\n`` each end one line).
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
    """An ATX heading found at the top level: its 0-based line, level (1-6) and text."""

    line: int
    level: int
    text: str


@dataclass(frozen=True)
class BlockScan:
    """Headings in file order, and the line ranges ``[start, end)`` of code and HTML blocks."""

    headings: tuple[Heading, ...]
    code_ranges: tuple[tuple[int, int], ...]


#: Kinds of :class:`Block`.
HEADING, PARAGRAPH, ITEM, FENCE, CODE, HTML, RULE, QUOTE = (
    "heading",
    "paragraph",
    "item",
    "fence",
    "code",
    "html",
    "rule",
    "quote",
)


@dataclass(frozen=True)
class Block:
    """One top-level block of a text: its kind, lines ``[start, end)`` (trailing blank lines not included).

    ``level`` is a heading's level; ``text`` a heading's text or a fence's info string (``markdown`` in
    ````` ```markdown `````); ``ordered`` says a list item belongs to a numbered list; ``closed`` says a fence
    has its closing line (a fence left open runs to the end of the text).
    """

    kind: str
    start: int
    end: int
    level: int = 0
    text: str = ""
    ordered: bool = False
    closed: bool = True


@lru_cache(maxsize=1)
def _heading_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.disable(["table", "blockquote", "list", "reference", "lheading"])
    return md


@lru_cache(maxsize=1)
def _outline_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.disable(["table", "reference", "lheading"])
    return md


def _normalized(text: str) -> str:
    # The same normalization markdown-it's core 'normalize' rule does, done here because we call the block parser
    # directly (skipping inline parsing, which we do not need).  A leading BOM would hide a first-line heading.
    src = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    return src[1:] if src.startswith("\ufeff") else src


class _CollectorPause:
    """Keeps the cyclic garbage collector off while any thread parses, and restores it when the last one is done.

    Toggling ``gc`` per call is not thread-safe: with the MCP server's worker threads, one thread could read
    "disabled" (another thread's pause) and, after that thread re-enabled it, disable it again and never turn it
    back on.  A depth counter under a lock makes the first parse in remember the collector's state and the last
    one out restore it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._was_enabled:
                    gc.enable()


_collector_paused = _CollectorPause()


def _tokens(md: MarkdownIt, text: str) -> list[Token]:
    tokens: list[Token] = []
    # markdown-it allocates a Token per block: on a 4 MB history that is a few hundred thousand objects, and the
    # cyclic collector's passes over them made the scan superlinear (parse + history of a 10,000-entry file:
    # 1.2-1.5 s with the collector paused, 1.6-1.9 s without, measured again on these machines).  Nothing here
    # forms cycles; the collector is back on (if it was on) once no thread is parsing.
    with _collector_paused():
        md.block.parse(_normalized(text), md, {}, tokens)
    return tokens


def scan_blocks(text: str) -> BlockScan:
    """Scan ``text`` for top-level ATX headings and code/HTML block ranges (line numbers match split_lines)."""
    tokens = _tokens(_heading_parser(), text)
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
    """Outlines by text, least recently used first out, bounded by the total length of the texts held.

    A server lives long and reads many files: a cache bounded by count alone (it held up to 4,096 whole texts,
    each up to a file's size) could keep many megabytes for its lifetime.  Texts longer than ``max_text`` are not
    kept at all (parsing them dominates whatever a cache saves).  Thread-safe: MCP worker threads share it.
    """

    def __init__(self, max_chars: int, max_text: int) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, bool], tuple[Block, ...]] = OrderedDict()
        self._chars = 0
        self.max_chars = max_chars
        self.max_text = max_text

    def get(self, key: tuple[str, bool]) -> tuple[Block, ...] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, bool], value: tuple[Block, ...]) -> None:
        if len(key[0]) > self.max_text:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._chars += len(key[0])
            while self._chars > self.max_chars:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old[0])

    @property
    def chars(self) -> int:
        """Total length of the texts held."""
        return self._chars

    def clear(self) -> None:
        """Forget every outline."""
        with self._lock:
            self._items.clear()
            self._chars = 0


# 2 M characters of text (the blocks add about as much again): dozens of 30 KB state files' entries and sections.
_outlines = _OutlineCache(max_chars=2_000_000, max_text=200_000)


def outline(text: str, *, lists: bool = True) -> tuple[Block, ...]:
    """The top-level blocks of ``text``, in order; a list gives one :data:`ITEM` block per item.

    Meant for short texts (a section, an entry, an archive chunk): lists and quotes are parsed too, which costs
    several times what :func:`scan_blocks` does.  With ``lists=False`` only the block rules of
    :func:`scan_blocks` run (list items and quotes then read as paragraphs), for callers that need only code,
    comments, rules and headings.  Blank lines belong to no block.  Results are cached by text: views ask for the
    same entries' blocks again and again (a cache bounded by the total size of the texts, see _OutlineCache).
    """
    key = (text, lists)
    found = _outlines.get(key)
    if found is None:
        found = _outline(text, lists)
        _outlines.put(key, found)
    return found


def _outline(text: str, lists: bool) -> tuple[Block, ...]:
    lines = _normalized(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the empty string after a final newline is not a line
    blocks: list[Block] = []
    tokens = _tokens(_outline_parser() if lists else _heading_parser(), text)
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
            closed = True
            if kind == FENCE:
                # markdown-it gives an unclosed fence the rest of the text: its last line is then not a closing one.
                last = lines[end - 1].strip() if end - 1 > start else ""
                closed = end - 1 > start and last.startswith(tok.markup) and not last.strip(tok.markup[0])
            blocks.append(Block(kind, start, _trim(lines, start, end), level, label, closed=closed))
        elif tok.level == 1 and tok.type == "list_item_open":
            blocks.append(Block(ITEM, start, _trim(lines, start, end), ordered=ordered))
    return tuple(blocks)


_KINDS = {
    "heading_open": HEADING,
    "paragraph_open": PARAGRAPH,
    "fence": FENCE,
    "code_block": CODE,
    "html_block": HTML,
    "hr": RULE,
    "blockquote_open": QUOTE,
}


def _trim(lines: list[str], start: int, end: int) -> int:
    end = min(end, len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def content_end(lines: Sequence[str]) -> int:
    """The index just past a section's last line of content (line 0 is its heading, so never below 1).

    Trailing blank lines and thematic breaks — ``---``, ``***``, ``___`` and their spaced forms, the separator
    agents put between sections — are not content: a block appended to the section goes before them.  Read with
    :func:`outline` (code and HTML blocks on, lists off), so a ``---`` inside a fence is content.
    """
    end = next((block.end for block in reversed(outline("".join(lines), lists=False)) if block.kind != RULE), 0)
    return max(end, min(1, len(lines)))


# The one line-level heading matcher, for :func:`statefile.model.document.read_machine_state` alone.  The scheduler's
# pre-step reads every program's Machine State table, which sits near the top of the file; running markdown-it's
# block rules over whole files for it would cost many times more (a C regex search skips every other line).  It is
# safe only as :func:`top_heading_lines` uses it: it matches ATX headings of level 1-2 (up to three spaces of
# indent) and every line that could open a fenced code or HTML block, and at the first such opener the caller falls
# back to :func:`scan_blocks` — with lists, quotes, tables and setext headings off (as :func:`_heading_parser`
# has them), only a fence or an HTML block can turn a heading line into text or text into a heading.
_TOP_HEADING_LINE = re.compile(r"^ {0,3}(?:(#{1,2})(?=[ \t\r\n]|$)([^\r\n]*)|```|~~~|<)", re.MULTILINE)


def top_heading_lines(text: str) -> Iterator[tuple[int, int, str]]:
    """Level 1-2 ATX heading lines of ``text`` as ``(offset, level, text)``, found without markdown-it.

    A line that could open a fenced code or HTML block comes as ``(offset, 0, "")``: from there on only
    :func:`scan_blocks` can say which lines are headings, so the caller must stop and use it.  The heading text
    still carries a closing ``##`` sequence (markdown-it drops it); :func:`statefile.model.patterns.heading_key`
    ignores it.  Bare ``\\r`` line endings are not lines here: callers with them use :func:`scan_blocks`.
    """
    for match in _TOP_HEADING_LINE.finditer(text):
        marks = match.group(1)
        if marks is None:
            yield match.start(), 0, ""
        else:
            yield match.start(), len(marks), match.group(2).strip()
