"""Search across every program's memory: the state files, their archives, and the shared lessons.

Matching is case-insensitive substring matching of each query word, line by line, with the line's *block* (its
history entry, or its bullet item) as context.  Ranking, best first:

1. lines holding every query word (score 100, +50 when the words also appear as the exact phrase, +25 when every
   word appears as a whole word — "variant 3" ranks above "variant 30");
2. lines holding some words whose entry or bullet holds all of them (score 90);
3. lines holding some words (score ``80 × matched / words``);

then, on equal scores, the live file before its archive, newer iterations before older ones (a line outside any
iteration – a lesson, the Machine State – counts as newest in the live file and oldest in the archive), then path
and line number, so the order is deterministic.

A linear scan, on purpose: the files come fresh from the branch on every call, so an FTS index (sqlite3 FTS5)
would have to be rebuilt each time, which costs more than scanning; a few hundred files of 30 KB plus their
archives scan in well under a second.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from statefile.defaults import SHARED_PROGRAM
from statefile.errors import UsageError
from statefile.model.archive import ARCHIVE_ROOT, part_number
from statefile.model.history import (
    Iteration,
    IterationRange,
    entry_title,
    is_bullet_entry,
    is_entry_heading,
    parse_entry,
)
from statefile.model.text import line_body, split_lines

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s+|$)(.*?)(?:\s+#+\s*)?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ITEM = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Hit:
    """One matching line: where it is (program, store path, section, iteration, 1-based line) and its score."""

    program: str
    path: str
    section: str
    iteration: int | None
    line_no: int
    line: str
    score: float


def classify(path: str) -> tuple[str, bool] | None:
    """``(program, is_archive)`` for a store path, or ``None`` for files that are not memory.

    ``perf.md`` → ``("perf", False)``; ``archive/perf/0001.md`` → ``("perf", True)``;
    ``_shared.md`` → ``("_shared", False)``.
    """
    parts = path.split("/")
    if len(parts) == 1 and path.endswith(".md") and len(path) > 3:
        return path[:-3], False
    if len(parts) == 3 and parts[0] == ARCHIVE_ROOT and parts[1] and part_number(parts[2]) is not None:
        return parts[1], True
    return None


@dataclass
class _Line:
    number: int
    text: str
    section: str
    iteration: int | None
    newness: int | None
    block: int


def _scan(text: str) -> list[_Line]:
    """Every non-blank line with its section heading, iteration and block number."""
    out: list[_Line] = []
    section = ""
    iteration: int | None = None
    newness: int | None = None
    block = 0
    in_entry = False
    fence: str | None = None
    fresh = True  # the next item or paragraph starts a new block
    for index, raw in enumerate(split_lines(text)):
        body = line_body(raw)
        stripped = body.strip()
        heading = None if fence is not None else _HEADING.match(body)
        if fence is not None:
            if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                fence = None
        elif heading:
            level, title = len(heading.group(1)), heading.group(2).strip()
            block += 1
            iteration = newness = None
            in_entry = level >= 3
            if level <= 2:
                section = title
            elif is_entry_heading(entry_title(body)):
                iteration, newness = _numbers(body)
        elif not stripped:
            fresh = True
            continue
        elif not in_entry and (_ITEM.match(body) or fresh):
            block += 1
            iteration = newness = None
            if is_bullet_entry(body):
                iteration, newness = _numbers(body)
        if fence is None and not heading:
            opens = _FENCE.match(body)
            if opens:
                fence = opens.group(1)
        fresh = False
        out.append(_Line(index + 1, body, section, iteration, newness, block))
    return out


def _numbers(line: str) -> tuple[int | None, int | None]:
    """(iteration, newness) of an entry's first line: an iteration is both; a range is only as new as its end."""
    entry = parse_entry(line)
    if isinstance(entry, Iteration):
        return entry.number, entry.number
    if isinstance(entry, IterationRange):
        return None, entry.last
    return None, None


def _terms(query: str) -> list[str]:
    words = [w.strip("\"'").casefold() for w in query.split()]
    return list(dict.fromkeys(w for w in words if w))


def search(files: Mapping[str, str], query: str, *, program: str | None = None, limit: int = 50) -> list[Hit]:
    """Lines of ``files`` (store path → text) matching ``query``, best first (see the module docstring).

    With ``program``, only that program's file and archive are searched, plus ``_shared.md``, whose lessons are
    part of every program's memory.  Paths that are not memory files are ignored.
    """
    terms = _terms(query)
    if not terms:
        raise UsageError("empty search query; give one or more words to look for")
    if limit < 1:
        raise UsageError(f"limit must be at least 1 (got {limit})")
    phrase = " ".join(terms)
    ranked: list[tuple[tuple[float, int, float, str, int], Hit]] = []
    for path, text in files.items():
        kind = classify(path)
        if kind is None:
            continue
        name, archived = kind
        if program is not None and name not in (program, SHARED_PROGRAM):
            continue
        lines = _scan(text)
        found = [(line, {t for t in terms if t in line.text.casefold()}) for line in lines]
        per_block: dict[int, set[str]] = {}
        for line, matched in found:
            per_block.setdefault(line.block, set()).update(matched)
        for line, matched in found:
            if not matched:
                continue
            if len(matched) == len(terms):
                score = 100.0
                folded = " ".join(line.text.casefold().split())
                if len(terms) > 1 and phrase in folded:
                    score += 50
                # "variant 3" should rank "… variant 3 …" above "… variant 30 …".
                if all(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", folded) for t in terms):
                    score += 25
            elif len(per_block[line.block]) == len(terms):
                score = 90.0
            else:
                score = round(80 * len(matched) / len(terms), 1)
            # Outside any iteration: the live file's lessons and state are current; archived text is old.
            unknown = float("-inf") if archived else float("inf")
            newness = unknown if line.newness is None else float(line.newness)
            hit = Hit(
                program=name,
                path=path,
                section=_SURROGATE.sub("\ufffd", line.section),
                iteration=line.iteration,
                line_no=line.number,
                line=_SURROGATE.sub("\ufffd", line.text.strip()),
                score=score,
            )
            ranked.append(((-score, int(archived), -newness, path, line.number), hit))
    ranked.sort(key=lambda pair: pair[0])
    return [hit for _, hit in ranked[:limit]]


def hit_line(hit: Hit, width: int = 160) -> str:
    """One line for terminal output: ``perf.md:57 [📊 Iteration History] #12 — the line``."""
    where = f"{hit.path}:{hit.line_no}"
    iteration = f" #{hit.iteration}" if hit.iteration is not None else ""
    text = f"{where} [{hit.section or '-'}]{iteration} — {hit.line}"
    return text if len(text) <= width else text[: width - 1] + "…"
