"""Search across every program's memory: the state files, their archives, and the shared lessons.

Whole words, case-insensitive (``m3`` finds "m3," not "m30"; ``cach*`` matches word starts).  A line holding a term
scores its *block*'s (entry or bullet) BM25 plus :data:`LINE_WEIGHT` of its own, by SQLite's FTS5 (several words also
count as one phrase).  Ties: entries before range lines, the live file before its archive, newer first, then path
and line.  Older copies of a range line that a newer matching one covers fold into it (``Hit.copies``)."""

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
from statefile.model.history import Iteration, IterationRange, Span
from statefile.model.text import line_body, split_lines

_SURROGATE = re.compile("[\ud800-\udfff]")
#: Sort key of a hit: (-score, range order, archived, -newness, path, line).
_Key = tuple[float, int, int, float, str, int]
#: Distinct words (and characters of one) that count: an agent's tool call could send ten thousand.
MAX_TERMS = 32
MAX_TERM_CHARS = 100
#: The line's share of a hit's score, beside its block's (a field weight, as in BM25F).
LINE_WEIGHT = 0.5
# A character FTS5's default tokenizer (unicode61) keeps in a token: letters and digits.
_TOKEN = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class Hit:
    """One matching line: where, its score, ``kind``, a range's ``first``/``last`` and its older ``copies``."""

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
    archived: bool = False  # the line lives in an archive part, not the live file
    expand: str | None = None  # the command that prints the whole entry (``statefile expand perf 12``)


def classify(path: str) -> tuple[str, bool] | None:
    """``(program, is_archive)`` for a store path (``archive/perf/0001.md`` → ``("perf", True)``), else ``None``."""
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
    span: tuple[int, int] | None = None  # a range entry's iterations, on its first line


def _scan(text: str, *, archived: bool) -> list[_Line]:
    """Non-blank lines with section, iteration and block, by the state file's own parser: search and expand agree."""
    doc = parse(text)
    lines = split_lines(text)
    found: dict[int, _Line] = {}
    block = 0

    def mark(rows: range, iteration: int | None = None, newness: int | None = None, span: Span | None = None) -> None:
        title = section.title or ""  # every line marked lies in the section being read
        found.update({n: _Line(n + 1, line_body(lines[n]), title, iteration, newness, block, span) for n in rows})

    for index, section in enumerate(doc.sections):
        # The live file's entries are its history's; an archive part's are every chunk's.
        located = doc.entries_of(index) if archived or (doc.history_start or (-1,))[0] == index else ()
        first = located[0].start if located else section.start + len(section.lines)
        block += 1
        mark(range(section.start, section.start + 1))  # the heading line (or the preamble's first line)
        offset = section.start + (1 if section.title is not None else 0)
        grouped = False
        for part in outline("".join(section.lines[offset - section.start : first - section.start])):
            if part.kind == HEADING or not grouped:
                block += 1
                grouped = part.kind == HEADING
            mark(range(offset + part.start, offset + part.end))
        for entry in located:
            block += 1
            # An iteration is as new as its number; a range only as new as its end.
            iteration = entry.entry.number if isinstance(entry.entry, Iteration) else None
            newness = entry.entry.last if isinstance(entry.entry, IterationRange) else iteration
            mark(range(entry.start, entry.end), iteration, newness)
            if isinstance(entry.entry, IterationRange):
                mark(range(entry.start, entry.start + 1), None, newness, (entry.entry.first, entry.entry.last))
    return [line for _, line in sorted(found.items()) if line.text.strip()]


def _terms(query: str) -> list[str]:
    words = [w.strip("\"'").casefold()[:MAX_TERM_CHARS] for w in query.split()]
    return list(dict.fromkeys(w for w in words if w.rstrip("*")))[:MAX_TERMS]


def _bm25(documents: Iterable[tuple[int, str]], query: str) -> dict[int, float]:
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE doc USING fts5(body)")
        cleaned = ((i, _SURROGATE.sub("\ufffd", text)) for i, text in documents)
        db.executemany("INSERT INTO doc(rowid, body) VALUES (?, ?)", cleaned)
        rows = db.execute("SELECT rowid, bm25(doc) FROM doc WHERE doc MATCH ?", (query,)).fetchall()
    db.close()
    # bm25() is negative; six decimals keep equal lines equal across platforms.
    return {int(rowid): round(-float(score), 6) for rowid, score in rows}


def search(files: Mapping[str, str], query: str, *, program: str | None = None, limit: int = 50) -> list[Hit]:
    """Lines of ``files`` (path → text) matching ``query``, best first; ``program``: its files and ``_shared.md``."""
    terms = _terms(query)
    if not terms:
        raise UsageError("empty search query; give one or more words to look for")
    if limit < 1:
        raise UsageError(f"limit must be at least 1 (got {limit})")
    patterns = []
    for term in terms:  # whole words (``cach*``: word starts); edges only at word characters: ``#12``, ``x.ts``
        core = term.rstrip("*")
        before = r"(?<!\w)" if core[:1].isalnum() or core[:1] == "_" else ""
        after = r"\w*" if term.endswith("*") else (r"(?!\w)" if core[-1:].isalnum() or core[-1:] == "_" else "")
        patterns.append(re.compile(before + re.escape(core) + after))
    scanned: list[tuple[str, str, bool, _Line]] = []
    blocks: dict[tuple[str, int], list[str]] = {}
    for path, text in files.items():
        kind = classify(path)
        if kind is None or (program is not None and kind[0] not in (program, SHARED_PROGRAM)):
            continue
        for line in _scan(text, archived=kind[1]):
            scanned.append((path, *kind, line))
            blocks.setdefault((path, line.block), []).append(line.text)
    # FTS5: any term as a quoted phrase or prefix, OR the whole query as one phrase; "" when it indexes no term.
    phrases = [(t.rstrip("*"), " *" if t.endswith("*") else "") for t in terms if _TOKEN.search(t.rstrip("*"))]
    if phrases and len(terms) > 1 and not any(t.endswith("*") for t in terms):
        phrases.append((" ".join(core for core, _ in phrases), ""))
    fts = " OR ".join('"' + core.replace('"', '""') + '"' + star for core, star in phrases) if scanned else ""
    block_ids = {key: index for index, key in enumerate(blocks)}
    line_scores = _bm25(((i, s[3].text) for i, s in enumerate(scanned)), fts) if fts else {}
    block_scores = _bm25(((block_ids[k], "\n".join(v)) for k, v in blocks.items()), fts) if fts else {}
    ranked: list[tuple[_Key, Hit]] = []
    for index, (path, name, archived, line) in enumerate(scanned):
        folded = line.text.casefold()
        # Whole words, as written (FTS5's tokens would let "x ts" match "x.ts"): the line must hold a term.
        if not any(pattern.search(folded) for pattern in patterns):
            continue
        block = block_ids[(path, line.block)]
        score = round(block_scores.get(block, 0.0) + LINE_WEIGHT * line_scores.get(index, 0.0), 4)
        what = "iteration" if line.iteration is not None else "range" if line.span else "text"
        # Outside any iteration: the live file's lessons and state are current; archived text is old.
        newness = (float("-inf") if archived else float("inf")) if line.newness is None else float(line.newness)
        first, last = line.span or (None, None)
        section, text = (_SURROGATE.sub("\ufffd", part) for part in (line.section, line.text.strip()))
        whole = f"statefile expand {name} {line.iteration}" if line.iteration is not None else None
        hit = Hit(name, path, section, line.iteration, line.number, text, score, what, first, last, (), archived, whole)
        order = (1 + int(archived)) if line.span else 0
        ranked.append(((-score, order, int(archived), -newness, path, line.number), hit))
    # Each range line's older copies fold into its best-ranked one.
    groups: dict[tuple[str, int, int], list[tuple[_Key, Hit]]] = {}
    out: list[tuple[_Key, Hit]] = []
    for key, hit in sorted(ranked, key=lambda pair: _age(pair[1])):
        if hit.first is None or hit.last is None:
            out.append((key, hit))
            continue
        head = next((g for g in groups if g[0] == hit.program and g[1] <= hit.first and hit.last <= g[2]), None)
        groups.setdefault(head or (hit.program, hit.first, hit.last), []).append((key, hit))
    for members in groups.values():
        best_key, best = min(members, key=lambda pair: pair[0])
        others = sorted((h for _, h in members if h is not best), key=_age)
        out.append((best_key, replace(best, copies=tuple(f"{h.path}:{h.line_no}" for h in others))))
    return [hit for _, hit in sorted(out, key=lambda pair: pair[0])][:limit]


def _age(hit: Hit) -> tuple[int, int, int]:
    """Newest first: the live file, then archive parts from the newest, later lines first within a part."""
    return (1, -(part_number(hit.path.rsplit("/", 1)[-1]) or 0), -hit.line_no) if hit.archived else (0, 0, -hit.line_no)


def hit_dict(hit: Hit) -> dict[str, object]:
    """JSON-ready form of a hit, with the command that expands its entry."""
    return {**asdict(hit), "copies": list(hit.copies)}


def hit_line(hit: Hit, width: int = 160) -> str:
    """One line for a terminal: ``perf.md:57 [📊 Iteration History] #12 — the line``."""
    number = f" #{hit.iteration}" if hit.iteration is not None else f" #{hit.first}–{hit.last}" if hit.first else ""
    copies = f" (+{len(hit.copies)} older cop{'ies' if len(hit.copies) != 1 else 'y'})" if hit.copies else ""
    head = f"{hit.path}:{hit.line_no} [{hit.section or '-'}]{number}{copies} — "
    text = head + hit.line
    return text if len(text) <= width else text[: max(width - 1, len(head) + 10)] + "…"
