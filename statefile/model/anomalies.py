"""Find what is odd about a state file without refusing to read it: the basis of ``StateDocument.warnings``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from statefile.defaults import MAX_EXPONENT, MAX_ITERATION
from statefile.model.history import Iteration, IterationRange, OpaqueEntry
from statefile.model.machine_state import count_field, field_key, table_rows, unreadable_count
from statefile.model.patterns import FRACTIONAL_HEAD, GAP_ACKNOWLEDGED, entry_title, leading_number, says_no_number
from statefile.model.sections import SECTION_KINDS
from statefile.model.spans import Span, highest, inside, merge, missing, of_numbers, spans_text
from statefile.model.text import clip
from statefile.numbers import number_text

if TYPE_CHECKING:  # the document imports this module for its ``warnings``
    from statefile.model.document import StateDocument


#: Warning codes ``statefile repair`` fixes (see :mod:`statefile.policy.repair`); ``check`` points to it for these.
REPAIRABLE = frozenset(
    {
        "machine-state-heading",
        "missing-history-heading",
        "duplicate-section",
        "duplicate-iteration",
        "overlapping-ranges",
    }
)


@dataclass(frozen=True)
class Anomaly:
    """Something odd about a file that does not stop it being read: a code and a sentence."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def find_anomalies(doc: StateDocument) -> Iterator[Anomaly]:
    """Yield every anomaly in ``doc``, in a stable order."""
    if not doc.render().strip():
        yield Anomaly("empty", "the file is empty")
        return
    if (section := doc.section("machine_state")) is None:
        yield Anomaly("missing-machine-state", "no Machine State section: the scheduler treats this as a new program")
    else:  # the scheduler finds its table by the exact bytes: "## 2. ⚙️ Machine State" is one it cannot see
        if section.title is not None and SECTION_KINDS["machine_state"][0] not in section.lines[0]:
            yield Anomaly(
                "machine-state-heading",
                f"heading '## {section.title}' is not the exact '## ⚙️ Machine State' the upstream scheduler "
                "looks for; any statefile write restores it",
            )
        if len(doc.machine_state) <= 1:
            yield Anomaly("empty-machine-state", "the Machine State section has no table rows")
    state = doc.machine_state
    problems = [next_iteration_problem(count_field(state, "iteration_count"), doc.highest_iteration)]
    problems += [number_row_problem(state, key) for key in NUMBER_ROWS] + count_row_problems(doc)
    for problem in filter(None, problems):  # what record would refuse to go on from, for check to fail on first
        yield Anomaly("implausible-machine-state", f"{problem} — record cannot go on from it; correct it by hand")
    for kind, count in Counter(s.kind for s in doc.sections if s.kind in SECTION_KINDS).items():
        if count > 1:
            yield Anomaly("duplicate-section", f"section '{SECTION_KINDS[kind][0][3:]}' appears {count} times")
    if (unclosed := doc.unclosed_block) is not None:
        yield Anomaly(
            "unclosed-block",
            f"a code fence or HTML block opened at line {unclosed + 1} is never closed: the rest of the file is code, "
            "and record/compact refuse to edit it; close the block",
        )
    if doc.history_misplaced:
        yield Anomaly("missing-history-heading", "iteration entries sit under another section (no history heading)")
    for entry in (entry for entry in doc.history if isinstance(entry, OpaqueEntry)):
        if entry.implausible is not None:
            why = f"{entry.implausible:,}, beyond any history ({MAX_ITERATION:,}): kept as text and counted for nothing"
        elif odd := FRACTIONAL_HEAD.match(entry_title(entry.heading)):
            why = f"{odd.group(1)}, no whole number: kept as text, counted for nothing and never folded"
        else:
            continue
        yield Anomaly(
            "implausible-number", f"heading '{clip(entry.heading, 80)}' names iteration {why}; correct the number"
        )
    iterations, ranges = doc.iterations, doc.ranges
    seen = Counter(n for e in iterations for n in e.covers)
    if dupes := sorted(n for n, c in seen.items() if c > 1):
        yield Anomaly(
            "duplicate-iteration", f"iteration numbers appear more than once: {spans_text(of_numbers(dupes))}"
        )
    in_ranges = merge(s for r in ranges for s in r.spans)
    if overlap := [n for n in seen if inside(in_ranges, n)]:
        yield Anomaly(
            "range-overlaps-entry", f"detailed entries fall inside a range: {spans_text(of_numbers(overlap))}"
        )
    for a, b in pairwise(sorted(ranges, key=lambda r: r.first)):
        if b.first <= a.last:
            yield Anomaly("overlapping-ranges", f"ranges {a.first}–{a.last} and {b.first}–{b.last} overlap")
    covered = merge([s for e in iterations for s in e.spans] + in_ranges)
    if gaps := history_gaps(doc, covered)[0]:
        yield Anomaly(
            "history-gap",
            f"no entry or range covers iterations {spans_text(gaps)} (a known gap: add "
            f"'<!-- statefile: gap {spans_text(gaps[:1])} acknowledged -->' under the history heading)",
        )
    stated, top = state.get("iteration_count"), highest(covered)
    if isinstance(stated, int) and covered and stated != top:
        yield Anomaly(
            "iteration-count-mismatch", f"Iteration Count is {stated} but the history goes up to iteration {top}"
        )


def plausible(value: Decimal) -> bool:
    """A finite number whose magnitude a measurement could have (0, or within 1e±308)."""
    return value.is_finite() and (value == 0 or -MAX_EXPONENT <= value.adjusted() <= MAX_EXPONENT)


# The Machine State rows holding a number the record rules compare against: scheduler key → row label.
NUMBER_ROWS = {"best_metric": "Best Metric", "target_metric": "Target Metric"}


def number_row_problem(state: Mapping[str, Any], key: str) -> str:
    """Why the :data:`NUMBER_ROWS` row ``key`` holds what the rules cannot compare (``lots``, ``1e9999999``), or ""."""
    number = leading_number(state.get(key))
    if number is None and not says_no_number(state.get(key)):
        what = "not a number (write the number, or — for none)"
    elif number is not None and not plausible(number):
        what = f"not a plausible number (beyond 1e±{MAX_EXPONENT})"
    else:
        return ""
    return f"the Machine State row '{NUMBER_ROWS[key]}' holds {clip(str(state.get(key)), 40)!r}, {what}"


def count_row_problems(doc: StateDocument) -> list[str]:
    """Why a counting row holds no whole number (``abc``, which the scheduler reads as 0), one sentence per row."""
    section = doc.section("machine_state")
    cells = {row.key: row.value for row in table_rows(list(section.lines))} if section else {}  # a later row wins
    return [
        f"the Machine State row '{label}' holds {clip(cells[field_key(label)], 40)!r}, not a whole number (the "
        "scheduler reads it as 0)"
        for label in ("Iteration Count", "Consecutive Errors")
        if unreadable_count(cells.get(field_key(label)))
    ]


def next_iteration_problem(count: int, highest: int) -> str:
    """Why the next iteration (past ``count`` and the history's ``highest``) would be beyond MAX_ITERATION, or ""."""
    if (number := max(count, highest) + 1) <= MAX_ITERATION:
        return ""
    where = f"the 'Iteration Count' row says {number_text(count)}" if count >= highest else ""
    where = where or f"the history goes up to iteration {highest:,}"
    return f"the next iteration would be {number_text(number)}, beyond {MAX_ITERATION:,}: {where}"


def history_gaps(doc: StateDocument, covered: list[Span] | None = None) -> tuple[list[Span], list[Span]]:
    """The history's holes: ``(open, acknowledged)`` (by a ``<!-- statefile: gap 12–40 acknowledged -->`` comment)."""
    if covered is None:
        covered = merge(s for e in doc.history if isinstance(e, (Iteration, IterationRange)) for s in e.spans)
    top = highest(covered)
    if not missing(covered, top):
        return [], []
    found = [(int(m.group(1)), int(m.group(2) or m.group(1))) for m in GAP_ACKNOWLEDGED.finditer(doc.render())]
    open_gaps = missing(covered + merge((min(pair), max(pair)) for pair in found), top)
    return open_gaps, missing(covered + open_gaps, top)
