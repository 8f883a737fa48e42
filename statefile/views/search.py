"""Search across every program's memory: the state files, their archives, and the shared lessons.

Matching is case-insensitive and by whole words: ``m3`` finds "m3" and "m3," but not "m30"; a term ending in
``*`` matches words that start with it (``cach*`` finds "cache" and "caching").  A line is a hit when it holds at
least one query term; the line's *block* (its history entry, or its bullet item) is its context.

Ranking is BM25, as a search engine ranks, computed by SQLite's FTS5 (``bm25()``; standard library ``sqlite3``)
over two in-memory indexes built for the call: one row per block, and one row per line.  A hit's score is its
block's BM25 plus half its line's (field weights, as BM25F gives a body and a title: the entry or bullet is the
document looked for, and among its lines the one holding the words ranks first).  So a rare word outweighs a
common one (``blocked by policy`` ranks a line about a blocked push above "maintained by the Autoloop agent",
which holds only "by"), an entry holding every word outranks one holding some, and a word in a short entry
outweighs the same word in a long one.  A query of several words also asks for
them as one phrase, which adds the phrase's own BM25 where it occurs (the usual phrase boost).

On equal scores: detailed entries and other text before range lines, and range lines of the live file before
archived ones; then the live file before its archive, newer iterations before older ones (a line outside any
iteration – a lesson, the Machine State – counts as newest in the live file and oldest in the archive), then path
and line number, so the order is deterministic.

Range lines repeat: every compaction rewrites the range line it extends and archives the old one.  A range-line
hit whose iterations a newer matching range line also covers is folded into that one (``Hit.copies`` lists where
the older copies are), so five archived copies of one range line are one result, not five above the entry.

The indexes are rebuilt on every call, on purpose: the files come fresh from the branch each time (a stored index
would have to follow every commit), and building them is cheap (a few hundred files of 30 KB plus their archives
index in well under a second; FTS5 is compiled into every CPython sqlite3 build statefile supports).
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
from statefile.model.history import Entry, Iteration, IterationRange
from statefile.model.text import line_body, split_lines

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Hit:
    """One matching line: where it is (program, store path, section, iteration, 1-based line) and its score.

    ``kind`` says what the line belongs to: ``"iteration"`` (a detailed entry), ``"range"`` (a range line) or
    ``"text"`` (lessons, state, anything else); ``first``/``last`` are a range line's iterations.  ``copies`` are
    the ``path:line`` of older copies of the same range line folded into this hit.
    """

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
    """Every non-blank line with its section heading, iteration and block number.

    The file is read with the state file's own parser (an archive part is markdown too: its ``## Archived …``
    chunks are read the way the Iteration History is), so search, expand and the file agree on what an entry is.
    An entry is one block and its lines carry the entry's iteration; outside entries, each top-level block the
    scanner finds (a bullet, a paragraph, a code block) is one block, and a ``###`` sub-heading holds what follows
    it up to the next heading.
    """
    doc = parse(text)
    lines = split_lines(text)
    # line -> (block, iteration, newness, range span on the entry's first line)
    where: list[tuple[int, int | None, int | None, tuple[int, int] | None] | None] = [None] * len(lines)
    block = 0
    for index, section in enumerate(doc.sections):
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
            iteration, newness = _numbers(entry.entry)
            for line in range(entry.start, entry.end):
                where[line] = (block, iteration, newness, None)
            if isinstance(entry.entry, IterationRange):
                where[entry.start] = (block, None, newness, (entry.entry.first, entry.entry.last))
    titles = [""] * len(lines)
    for section in doc.sections:
        for line in range(section.start, min(len(lines), section.start + len(section.lines))):
            titles[line] = section.title or ""
    out: list[_Line] = []
    for number, raw in enumerate(lines):
        body = line_body(raw)
        spot = where[number]
        if not body.strip() or spot is None:
            continue
        block_id, iteration, newness, span = spot
        out.append(_Line(number + 1, body, titles[number], iteration, newness, block_id, span))
    return out


def _numbers(entry: Entry) -> tuple[int | None, int | None]:
    """(iteration, newness) of an entry: an iteration is both; a range is only as new as its end."""
    if isinstance(entry, Iteration):
        return entry.number, entry.number
    if isinstance(entry, IterationRange):
        return None, entry.last
    return None, None


#: Distinct words of a query that count (each costs a pass over every line): a query is a few words, and an agent's
#: tool call could otherwise send ten thousand and keep the tool busy past its time-out.
MAX_TERMS = 32
#: Characters of one term that count: past this it is no word anyone searches for.
MAX_TERM_CHARS = 100


def _terms(query: str) -> list[str]:
    words = [w.strip("\"'").casefold()[:MAX_TERM_CHARS] for w in query.split()]
    return list(dict.fromkeys(w for w in words if w.rstrip("*")))[:MAX_TERMS]


def _pattern(term: str) -> re.Pattern[str]:
    """Whole-word match of ``term`` (``cach*``: words starting with ``cach``); word edges only where the term has
    word characters, so ``#12`` and ``x.ts`` match as written."""
    prefix = term.endswith("*")
    core = term.rstrip("*")
    head = r"(?<!\w)" if core[:1].isalnum() or core[:1] == "_" else ""
    tail = r"\w*" if prefix else (r"(?!\w)" if core[-1:].isalnum() or core[-1:] == "_" else "")
    return re.compile(head + re.escape(core) + tail)


#: A hit's score is its block's BM25 plus this share of its line's: the entry (or bullet) is the document an agent
#: looks for, the line says where in it the words are (a field weight, as BM25F weighs a title against a body).
LINE_WEIGHT = 0.5


def _fts_query(terms: list[str]) -> str | None:
    """The FTS5 query for ``terms``: any of them (OR), each as a quoted phrase of its tokens (``x.ts`` is the
    phrase "x ts", ``cach*`` the prefix query ``"cach" *``), plus the whole query as one phrase when it has several
    words and no prefix.  ``None`` when no term has a character FTS5 indexes (``→``): nothing to rank by."""

    def quoted(text: str) -> str:
        return '"' + text.replace('"', '""') + '"'

    parts = []
    for term in terms:
        core = term.rstrip("*")
        if not _TOKEN.search(core):
            continue
        parts.append(quoted(core) + (" *" if term.endswith("*") else ""))
    if not parts:
        return None
    if len(terms) > 1 and not any(t.endswith("*") for t in terms):
        parts.append(quoted(" ".join(t for t in terms if _TOKEN.search(t))))
    return " OR ".join(parts)


# A character FTS5's default tokenizer (unicode61) keeps in a token: letters and digits.
_TOKEN = re.compile(r"[^\W_]")


def bm25_scores(documents: Iterable[tuple[int, str]], query: str) -> dict[int, float]:
    """BM25 of each ``(id, text)`` document that matches the FTS5 ``query``, higher is better (SQLite's FTS5
    ``bm25()``, k1 = 1.2, b = 0.75, over the documents given: their count, lengths and document frequencies)."""
    # Lone surrogates (undecodable bytes of a file) cannot reach SQLite as UTF-8; they match nothing anyway.
    rows_in = ((rowid, _SURROGATE.sub("\ufffd", text)) for rowid, text in documents)
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE doc USING fts5(body)")
        db.executemany("INSERT INTO doc(rowid, body) VALUES (?, ?)", rows_in)
        rows = db.execute("SELECT rowid, bm25(doc) FROM doc WHERE doc MATCH ?", (query,)).fetchall()
    db.close()
    # FTS5's bm25() is negative (more negative is better); six decimals keep equal lines equal across platforms.
    return {int(rowid): round(-float(score), 6) for rowid, score in rows}


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
    patterns = {term: _pattern(term) for term in terms}
    # Every line of every file searched, with its block: the collection BM25's statistics are taken over.
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
    fts = _fts_query(terms)
    line_scores: dict[int, float] = {}
    block_scores: dict[int, float] = {}
    block_ids = {key: index for index, key in enumerate(blocks)}
    if fts is not None and scanned:
        line_scores = bm25_scores(((i, s[3].text) for i, s in enumerate(scanned)), fts)
        block_scores = bm25_scores(((block_ids[k], "\n".join(v)) for k, v in blocks.items()), fts)
    ranked: list[tuple[_Key, Hit]] = []
    for index, (path, name, archived, line) in enumerate(scanned):
        folded = line.text.casefold()
        # Whole words, as written (FTS5's tokens would let "x ts" match "x.ts"): the line must hold a term.
        if not any(pattern.search(folded) for pattern in patterns.values()):
            continue
        block = block_ids[(path, line.block)]
        score = round(block_scores.get(block, 0.0) + LINE_WEIGHT * line_scores.get(index, 0.0), 4)
        span = line.span
        what = "iteration" if line.iteration is not None else "range" if span else "text"
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
            kind=what,
            first=span[0] if span else None,
            last=span[1] if span else None,
        )
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
    """Sorted hits, range-line copies folded: older range lines whose iterations a newer matching range line of the
    program covers join its group; each group is shown once, as its best-ranked member, listing the others."""
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
    """One line for terminal output: ``perf.md:57 [📊 Iteration History] #12 — the line``.

    Archived lines name their chunk (``[Archived 2026-01-05 — compaction of perf.md]``); a range line says which
    iterations it covers and how many older copies of it were folded in.
    """
    where = f"{hit.path}:{hit.line_no}"
    number = f" #{hit.iteration}" if hit.iteration is not None else f" #{hit.first}–{hit.last}" if hit.first else ""
    copies = f" (+{len(hit.copies)} older cop{'ies' if len(hit.copies) != 1 else 'y'})" if hit.copies else ""
    head = f"{where} [{hit.section or '-'}]{number}{copies} — "
    text = head + hit.line
    return text if len(text) <= width else text[: max(width - 1, len(head) + 10)] + "…"
