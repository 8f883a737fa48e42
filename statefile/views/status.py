"""Memory pressure at a glance: how full a state file is, what each section costs, what the next record will do.

Tokens are estimated as ``ceil(UTF-8 bytes / 4)`` (bytes, not characters, so emoji and non-Latin text are not
undercounted): for comparing costs, not for billing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from statistics import median
from typing import Any

from statefile.defaults import AGGRESSIVE_AT, AGGRESSIVE_KEEP
from statefile.model import archive
from statefile.model.document import StateDocument
from statefile.model.text import utf8_size
from statefile.numbers import budget_text, number_text, percent, percent_text, plural, size_text
from statefile.policy.pruning import is_pinned

# The corpus's median detailed entry (154 entries, 27 files), for a file with none of its own.
TYPICAL_ENTRY_BYTES = 640
_TYPICAL_SAMPLE = 10  # the newest entries say most about the next one


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(UTF-8 bytes / 4)``."""
    return math.ceil(utf8_size(text) / 4)


def typical_entry_bytes(doc: StateDocument) -> int:
    """Median UTF-8 size of the newest detailed entries, or :data:`TYPICAL_ENTRY_BYTES` when there are none."""
    sizes = [utf8_size(entry.raw) for entry in doc.iterations[:_TYPICAL_SAMPLE]]
    return int(median(sizes)) if sizes else TYPICAL_ENTRY_BYTES


def count_archived_entries(archive_texts: Sequence[str]) -> int:
    """How many history entries (iterations and ranges) a program's archive parts hold."""
    return sum(len(archive.archive_entries(text)) for text in archive_texts)


def pressure(
    doc: StateDocument,
    *,
    max_bytes: int,
    archived_entries: int = 0,
    archive_parts: int = 0,
    aggressive_at: float = AGGRESSIVE_AT,
    keep_aggressive: int = AGGRESSIVE_KEEP,
) -> dict[str, Any]:
    """How close ``doc`` is to ``max_bytes``, per-section sizes and tokens, and whether the next record (a typical
    entry more) passes ``aggressive_at`` of the budget, with the compaction settings in force."""
    size = doc.size
    typical = typical_entry_bytes(doc)
    threshold = int(aggressive_at * max_bytes)
    lessons = [item for item in doc.list_items("lessons") if not item.is_placeholder]
    kinds = Counter(entry.kind for entry in doc.history)
    room = threshold - size
    return {
        "size_bytes": size,
        "max_bytes": max_bytes,
        "percent_of_budget": percent(size, max_bytes),
        "headroom_bytes": max_bytes - size,
        "over_budget": size > max_bytes,
        "tokens": estimate_tokens(doc.render()),
        "token_estimate": "ceil(utf8_bytes / 4)",
        "sections": [
            {"kind": s.kind, "title": s.title, "bytes": s.size, "tokens": estimate_tokens(s.text)} for s in doc.sections
        ],
        "counts": {
            "iterations": kinds["iteration"],
            "ranges": kinds["range"],
            "other_entries": kinds["opaque"],
            "lessons": len(lessons),
            "pinned_lessons": sum(1 for item in lessons if is_pinned(item.text)),
            "foreclosed": sum(1 for item in doc.list_items("foreclosed") if not item.is_placeholder),
            "future": sum(1 for item in doc.list_items("future") if not item.is_placeholder),
            "archived_entries": archived_entries,
            "archive_parts": archive_parts,
        },
        "typical_entry_bytes": typical,
        "aggressive_at": aggressive_at,
        "aggressive_threshold_bytes": threshold,
        "keep_aggressive": keep_aggressive,
        "next_record_bytes": size + typical,
        "next_record_triggers_aggressive": size + typical > threshold,
        "records_until_aggressive": max(0, room // typical),
    }


def pressure_lines(report: dict[str, Any], *, program: str | None = None) -> list[str]:
    """Human-readable lines for a :func:`pressure` report."""
    counts = report["counts"]
    name = f"{program}: " if program else ""
    n = number_text
    lines = [
        f"{name}{budget_text(report['size_bytes'], report['max_bytes'])}"
        + f", ~{plural(report['tokens'], 'token')} to read"
        + (" — OVER BUDGET" if report["over_budget"] else ""),
        f"  entries: {n(counts['iterations'])} detailed, {plural(counts['ranges'], 'range')}"
        + (f", {n(counts['other_entries'])} other" if counts["other_entries"] else "")
        + f"; archived: {plural(counts['archived_entries'], 'entry', 'entries')} in "
        + plural(counts["archive_parts"], "part"),
        f"  lessons: {n(counts['lessons'])} ({n(counts['pinned_lessons'])} pinned); "
        f"foreclosed: {n(counts['foreclosed'])}; future directions: {n(counts['future'])}",
    ]
    for section in report["sections"]:
        title = section["title"] or "(before the first heading)"
        lines.append(f"  {n(section['bytes']):>7} B  ~{n(section['tokens']):>6} tok  {title}")
    typical = size_text(report["typical_entry_bytes"])
    if report["next_record_triggers_aggressive"]:
        share = percent_text(100 * report["aggressive_at"])
        keep = report["keep_aggressive"]
        lines.append(
            f"  next record (~{typical}) passes {share} of the budget: compaction will keep "
            f"only the newest {plural(keep, 'entry', 'entries')} and merge ranges"
        )
    else:
        lines.append(
            f"  about {plural(report['records_until_aggressive'], 'more record')} before compaction turns aggressive "
            f"(typical entry ~{typical})"
        )
    return lines
