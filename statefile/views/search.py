"""Search across every program's memory: the state files, their archives, and the shared lessons.

Whole words, case-insensitive (``m3`` finds "m3," not "m30"; ``cach*`` matches word starts).  A line is a hit when
it holds a query term; its *block* (history entry or bullet) is its context.  Ranking is BM25 by SQLite's FTS5 over
two in-memory indexes built per call (the files come fresh from the branch): a hit scores its block's BM25 plus
:data:`LINE_WEIGHT` of its line's, and several words also count as one phrase.  Ties: entries before range lines,
the live file before its archive, newer before older, then path and line.  Older copies of a range line that a
newer matching one covers are folded into it (``Hit.copies``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace

from statefile.defaults import SHARED_PROGRAM
from statefile.errors import UsageError
from statefile.model.archive import ARCHIVE_ROOT, part_number
from statefile.model.blocks import HEADING, outline
from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange
from statefile.model.text import line_body, split_lines

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Hit:
    """One matching line: where it is, its score, ``kind`` (``iteration``, ``range`` or ``text``), a range line's
    ``first``/``last`` iterations and the ``path:line`` of older copies folded into it."""

    program: str
    path: str
    section: str
    iteration: int | None
    line_no: int
    line: str
    score: float
    kind: str = "text"
    first: int | None = None
    last: int | None = None
    copies: tuple[str, ...] = ()

    @property
    def archived(self) -> bool:
        """Whether the line lives in an archive part rather than the live file."""
        return self.path.startswith(f"{ARCHIVE_ROOT}/")

    @property
    def expand(self) -> str | None:
        """The command that prints the whole entry (``statefile expand perf 12``), for iteration hits."""
        return f"statefile expand {self.program} {self.iteration}" if self.iteration is not None else None


def classify(path: str) -> tuple[str, bool] | None:
    """``(program, is_archive)`` for a store path (``archive/perf/0001.md`` → ``("perf", True)``), or ``None``
    for files that are not memory."""
    parts = path.split("/")
    if len(parts) == 1 and path.endswith(".md") and len(path) > 3:
        return path[:-3], False
    if len(parts) == 3 and parts[0] == ARCHIVE_ROOT and parts[1] and part_number(parts[2]) is not None:
        return parts[1], True
    return None


#: Sort key of a hit: (-score, range order, archived, -newness, path, line).
_Key = tuple[float, int, int, float, str, int]


@dataclass
class _Line:
    number: int
    text: str
    section: str
    iteration: int | None
    newness: int | None
    block: int
    span: tuple[int, int] | None = None  # a range entry's iterations, on its first line


def _scan(text: str, *, archived: bool) -> list[_Line]:
    """Non-blank lines with section, iteration and block, by the state file's own parser: search and expand agree."""
    doc = parse(text)
    lines = split_lines(text)
    where: list[tuple[int, int | None, int | None, tuple[int, int] | None] | None] = [None] * len(lines)
    titles = [""] * len(lines)
    block = 0
    for index, section in enumerate(doc.sections):
        titles[section.start : section.start + len(section.lines)] = [section.title or ""] * len(section.lines)
        located = doc.entries_of(index) if archived else ()
        if not archived and doc.history_start is not None and doc.history_start[0] == index:
            located = doc.located_history
        first = located[0].start if located else section.start + len(section.lines)
        block += 1
        where[section.start] = (block, None, None, None)  # the heading line (or the preamble's first line)
        offset = section.start + (1 if section.title is not None else 0)
        grouped = False
        for part in outline("".join(section.lines[offset - section.start : first - section.start])):
            if part.kind == HEADING or not grouped:
                block += 1
                grouped = part.kind == HEADING
            for line in range(offset + part.start, offset + part.end):
                where[line] = (block, None, None, None)
        for entry in located:
            block += 1
            found = entry.entry
            # An iteration is as new as its number; a range only as new as its end.
            iteration = found.number if isinstance(found, Iteration) else None
            newness = found.last if isinstance(found, IterationRange) else iteration
            for line in range(entry.start, entry.end):
                where[line] = (block, iteration, newness, None)
            if isinstance(found, IterationRange):
                where[entry.start] = (block, None, newness, (found.first, found.last))
    out: list[_Line] = []
    for number, raw in enumerate(lines):
        body = line_body(raw)
        spot = where[number]
        if not body.strip() or spot is None:
            continue
        block_id, iteration, newness, span = spot
        out.append(_Line(number + 1, body, titles[number], iteration, newness, block_id, span))
    return out


#: Distinct words (and characters of one) that count: an agent's tool call could send ten thousand.
MAX_TERMS = 32
MAX_TERM_CHARS = 100


def _terms(query: str) -> list[str]:
    words = [w.strip("\"'").casefold()[:MAX_TERM_CHARS] for w in query.split()]
    return list(dict.fromkeys(w for w in words if w.rstrip("*")))[:MAX_TERMS]


def _pattern(term: str) -> re.Pattern[str]:
    """Whole words (``cach*``: word starts); edges only at word characters, so ``#12`` and ``x.ts`` match as written."""
    prefix = term.endswith("*")
    core = term.rstrip("*")
    head = r"(?<!\w)" if core[:1].isalnum() or core[:1] == "_" else ""
    tail = r"\w*" if prefix else (r"(?!\w)" if core[-1:].isalnum() or core[-1:] == "_" else "")
    return re.compile(head + re.escape(core) + tail)


#: The line's share of a hit's score, beside its block's (a field weight, as in BM25F).
LINE_WEIGHT = 0.5


def _fts_query(terms: list[str]) -> str | None:
    """Any term as a quoted phrase or prefix, OR the whole query as one; ``None``: nothing FTS5 indexes."""
    words = [term for term in terms if _TOKEN.search(term.rstrip("*"))]
    parts = [_quoted(term.rstrip("*")) + (" *" if term.endswith("*") else "") for term in words]
    if parts and len(terms) > 1 and not any(t.endswith("*") for t in terms):
        parts.append(_quoted(" ".join(t for t in terms if _TOKEN.search(t))))
    return " OR ".join(parts) or None


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


# A character FTS5's default tokenizer (unicode61) keeps in a token: letters and digits.
_TOKEN = re.compile(r"[^\W_]")


def bm25_scores(documents: Iterable[tuple[int, str]], query: str) -> dict[int, float]:
    """FTS5's BM25 of each ``(id, text)`` document matching ``query``, higher is better."""
    rows_in = ((rowid, _SURROGATE.sub("\ufffd", text)) for rowid, text in documents)
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE doc USING fts5(body)")
        db.executemany("INSERT INTO doc(rowid, body) VALUES (?, ?)", rows_in)
        rows = db.execute("SELECT rowid, bm25(doc) FROM doc WHERE doc MATCH ?", (query,)).fetchall()
    db.close()
    # bm25() is negative; six decimals keep equal lines equal across platforms.
    return {int(rowid): round(-float(score), 6) for rowid, score in rows}


def search(files: Mapping[str, str], query: str, *, program: str | None = None, limit: int = 50) -> list[Hit]:
    """Lines of ``files`` (store path → text) matching ``query``, best first; with ``program``, only its file and
    archive and ``_shared.md``."""
    terms = _terms(query)
    if not terms:
        raise UsageError("empty search query; give one or more words to look for")
    if limit < 1:
        raise UsageError(f"limit must be at least 1 (got {limit})")
    patterns = [_pattern(term) for term in terms]
    scanned: list[tuple[str, str, bool, _Line]] = []
    blocks: dict[tuple[str, int], list[str]] = {}
    for path, text in files.items():
        kind = classify(path)
        if kind is None:
            continue
        name, archived = kind
        if program is not None and name not in (program, SHARED_PROGRAM):
            continue
        for line in _scan(text, archived=archived):
            scanned.append((path, name, archived, line))
            blocks.setdefault((path, line.block), []).append(line.text)
    fts = _fts_query(terms) if scanned else None
    block_ids = {key: index for index, key in enumerate(blocks)}
    line_scores = bm25_scores(((i, s[3].text) for i, s in enumerate(scanned)), fts) if fts else {}
    block_scores = bm25_scores(((block_ids[k], "\n".join(v)) for k, v in blocks.items()), fts) if fts else {}
    ranked: list[tuple[_Key, Hit]] = []
    for index, (path, name, archived, line) in enumerate(scanned):
        folded = line.text.casefold()
        # Whole words, as written (FTS5's tokens would let "x ts" match "x.ts"): the line must hold a term.
        if not any(pattern.search(folded) for pattern in patterns):
            continue
        block = block_ids[(path, line.block)]
        score = round(block_scores.get(block, 0.0) + LINE_WEIGHT * line_scores.get(index, 0.0), 4)
        span = line.span
        what = "iteration" if line.iteration is not None else "range" if span else "text"
        # Outside any iteration: the live file's lessons and state are current; archived text is old.
        unknown = float("-inf") if archived else float("inf")
        newness = unknown if line.newness is None else float(line.newness)
        first, last = span or (None, None)
        section, text = (_SURROGATE.sub("\ufffd", part) for part in (line.section, line.text.strip()))
        hit = Hit(name, path, section, line.iteration, line.number, text, score, what, first, last)
        order = (1 + int(archived)) if span else 0
        ranked.append(((-score, order, int(archived), -newness, path, line.number), hit))
    hits = _fold_copies(ranked)
    return hits[:limit]


def _age(hit: Hit) -> tuple[int, int, int]:
    """Newest first: the live file, then archive parts from the newest, later lines first within a part."""
    if not hit.archived:
        return (0, 0, -hit.line_no)
    part = part_number(hit.path.rsplit("/", 1)[-1]) or 0
    return (1, -part, -hit.line_no)


def _fold_copies(ranked: list[tuple[_Key, Hit]]) -> list[Hit]:
    """Sorted hits, each range line's older copies folded into its best-ranked one."""
    groups: dict[str, list[list[tuple[_Key, Hit]]]] = {}
    out: list[tuple[_Key, Hit]] = []
    for key, hit in sorted(ranked, key=lambda pair: _age(pair[1])):
        if hit.kind != "range" or hit.first is None or hit.last is None:
            out.append((key, hit))
            continue
        program_groups = groups.setdefault(hit.program, [])
        for group in program_groups:
            newest = group[0][1]
            assert newest.first is not None and newest.last is not None
            if newest.first <= hit.first and hit.last <= newest.last:
                group.append((key, hit))
                break
        else:
            program_groups.append([(key, hit)])
    for program_groups in groups.values():
        for group in program_groups:
            best_key, best = min(group, key=lambda pair: pair[0])
            others = sorted((h for _, h in group if h is not best), key=_age)
            out.append((best_key, replace(best, copies=tuple(f"{h.path}:{h.line_no}" for h in others))))
    out.sort(key=lambda pair: pair[0])
    return [hit for _, hit in out]


def hit_dict(hit: Hit) -> dict[str, object]:
    """JSON-ready form of a hit, with the command that expands its entry."""
    return {**asdict(hit), "copies": list(hit.copies), "archived": hit.archived, "expand": hit.expand}


def hit_line(hit: Hit, width: int = 160) -> str:
    """One line for a terminal: ``perf.md:57 [📊 Iteration History] #12 — the line``."""
    where = f"{hit.path}:{hit.line_no}"
    number = f" #{hit.iteration}" if hit.iteration is not None else f" #{hit.first}–{hit.last}" if hit.first else ""
    copies = f" (+{len(hit.copies)} older cop{'ies' if len(hit.copies) != 1 else 'y'})" if hit.copies else ""
    head = f"{where} [{hit.section or '-'}]{number}{copies} — "
    text = head + hit.line
    return text if len(text) <= width else text[: max(width - 1, len(head) + 10)] + "…"
