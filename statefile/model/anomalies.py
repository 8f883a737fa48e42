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
from statefile.model.machine_state import count_field, table_rows, unreadable_count
from statefile.model.patterns import FRACTIONAL_HEAD, GAP_ACKNOWLEDGED, entry_title, leading_number, says_no_number
from statefile.model.sections import SECTION_KINDS
from statefile.model.spans import Span, highest, inside, merge, missing, of_numbers, spans_text
from statefile.model.text import clip
from statefile.numbers import number_text

if TYPE_CHECKING:  # the document imports this module for its ``warnings``
    from statefile.model.document import StateDocument


#: Warning codes ``statefile repair`` fixes (see :mod:`statefile.policy.repair`); ``check`` points to it for these.
REPAIRABLE = frozenset(
    {"machine-state-heading", "missing-history-heading", "duplicate-section", "duplicate-iteration",
     "overlapping-ranges"}
)  # fmt: skip


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
    state_section = doc.section("machine_state")
    if state_section is None:
        yield Anomaly("missing-machine-state", "no Machine State section: the scheduler treats this as a new program")
    else:
        # The scheduler finds its table by the exact bytes: "## 2. ⚙️ Machine State" is one it cannot see.
        if state_section.title is not None and SECTION_KINDS["machine_state"][0] not in state_section.lines[0]:
            yield Anomaly(
                "machine-state-heading",
                f"heading '## {state_section.title}' is not the exact '## ⚙️ Machine State' the upstream scheduler "
                "looks for; any statefile write restores it",
            )
        if not doc.machine_state or len(doc.machine_state) <= 1:
            yield Anomaly("empty-machine-state", "the Machine State section has no table rows")
    yield from machine_state_problems(doc)
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
    yield from _history_anomalies(doc)


def plausible(value: Decimal) -> bool:
    """A finite number whose magnitude a measurement could have (0, or within 1e±308)."""
    return value.is_finite() and (value == 0 or -MAX_EXPONENT <= value.adjusted() <= MAX_EXPONENT)


#: The Machine State rows holding a number the record rules compare against: scheduler key → row label.
NUMBER_ROWS = {"best_metric": "Best Metric", "target_metric": "Target Metric"}


def number_row_problem(state: Mapping[str, Any], key: str) -> str:
    """Why the row ``key`` (a :data:`NUMBER_ROWS` key) holds text (``lots``) or a number (``1e999999999``) the
    rules cannot compare with; "" when it holds a plausible number or says it holds none (``—``, ``n/a``)."""
    number = leading_number(state.get(key))
    if number is None and not says_no_number(state.get(key)):
        what = "not a number (write the number, or — for none)"
    elif number is not None and not plausible(number):
        what = f"not a plausible number (beyond 1e±{MAX_EXPONENT})"
    else:
        return ""
    return f"the Machine State row '{NUMBER_ROWS[key]}' holds {clip(str(state.get(key)), 40)!r}, {what}"


#: The counting rows: scheduler key → row label.  The scheduler reads text there as 0, which loses the count.
COUNT_ROWS = {"iteration_count": "Iteration Count", "consecutive_errors": "Consecutive Errors"}


def count_row_problems(doc: StateDocument) -> list[str]:
    """Why a :data:`COUNT_ROWS` row holds no whole number (``Iteration Count | abc``), read from the cells as
    written (the scheduler's view already made it 0), one sentence per row."""
    section = doc.section("machine_state")
    if section is None:
        return []
    cells = {row.key: row.value for row in table_rows(list(section.lines))}  # a later duplicate row wins, as there
    return [
        f"the Machine State row '{label}' holds {clip(cells[key], 40)!r}, not a whole number (the scheduler reads "
        "it as 0)"
        for key, label in COUNT_ROWS.items()
        if unreadable_count(cells.get(key))
    ]


def next_iteration_problem(count: int, highest: int) -> str:
    """Why the next iteration (one past ``count`` and the history's ``highest``) would be beyond
    :data:`~statefile.defaults.MAX_ITERATION`; "" when it would not."""
    number = max(count, highest) + 1
    if number <= MAX_ITERATION:
        return ""
    where = f"the history goes up to iteration {highest:,}"
    if count >= highest:
        where = f"the 'Iteration Count' row says {number_text(count)}"
    return f"the next iteration would be {number_text(number)}, beyond {MAX_ITERATION:,}: {where}"


def machine_state_problems(doc: StateDocument) -> Iterator[Anomaly]:
    """What ``record`` would refuse to go on from (the same functions it calls), for ``check`` to fail on first."""
    state = doc.machine_state
    problems = [
        next_iteration_problem(count_field(state, "iteration_count"), doc.highest_iteration),
        *(number_row_problem(state, key) for key in NUMBER_ROWS),
        *count_row_problems(doc),
    ]  # fmt: skip
    for problem in problems:
        if problem:
            yield Anomaly("implausible-machine-state", f"{problem} — record cannot go on from it; correct it by hand")


def _history_anomalies(doc: StateDocument) -> Iterator[Anomaly]:
    for entry in doc.history:
        if isinstance(entry, OpaqueEntry) and entry.implausible is not None:
            yield Anomaly(
                "implausible-number",
                f"heading '{clip(entry.heading, 80)}' names iteration {entry.implausible:,}, beyond any history "
                f"({MAX_ITERATION:,}): kept as text and counted for nothing; correct the number",
            )
        elif isinstance(entry, OpaqueEntry) and (odd := FRACTIONAL_HEAD.match(entry_title(entry.heading))):
            yield Anomaly(
                "implausible-number",
                f"heading '{clip(entry.heading, 80)}' names iteration {odd.group(1)}, no whole number: kept as text, "
                "counted for nothing and never folded; correct the number",
            )
    iterations = [e for e in doc.history if isinstance(e, Iteration)]
    ranges = [e for e in doc.history if isinstance(e, IterationRange)]
    seen = Counter(n for e in iterations for n in e.covers)
    dupes = sorted(n for n, c in seen.items() if c > 1)
    if dupes:
        yield Anomaly(
            "duplicate-iteration", f"iteration numbers appear more than once: {spans_text(of_numbers(dupes))}"
        )
    in_ranges = merge(s for r in ranges for s in r.spans)
    overlap = [n for n in seen if inside(in_ranges, n)]
    if overlap:
        yield Anomaly(
            "range-overlaps-entry", f"detailed entries fall inside a range: {spans_text(of_numbers(overlap))}"
        )
    ordered = sorted(ranges, key=lambda r: r.first)
    for a, b in pairwise(ordered):
        if b.first <= a.last:
            yield Anomaly("overlapping-ranges", f"ranges {a.first}–{a.last} and {b.first}–{b.last} overlap")
    covered = merge([s for e in iterations for s in e.spans] + [s for r in ranges for s in r.spans])
    top = highest(covered)
    gaps, _ = history_gaps(doc, covered)
    if gaps:
        yield Anomaly(
            "history-gap",
            f"no entry or range covers iterations {spans_text(gaps)} (a known gap: add "
            f"'<!-- statefile: gap {spans_text(gaps[:1])} acknowledged -->' under the history heading)",
        )
    count = doc.machine_state.get("iteration_count")
    if isinstance(count, int) and covered and count != top:
        yield Anomaly(
            "iteration-count-mismatch", f"Iteration Count is {count} but the history goes up to iteration {top}"
        )


def acknowledged_gaps(doc: StateDocument) -> list[Span]:
    """The iteration numbers a maintainer acknowledged as missing (``<!-- statefile: gap 12–40 acknowledged -->``)."""
    found = [(int(m.group(1)), int(m.group(2) or m.group(1))) for m in GAP_ACKNOWLEDGED.finditer(doc.render())]
    return merge((min(pair), max(pair)) for pair in found)


def history_gaps(doc: StateDocument, covered: list[Span] | None = None) -> tuple[list[Span], list[Span]]:
    """The history's holes below its highest iteration: ``(not acknowledged, acknowledged)``; a hole that cannot
    be filled is acknowledged by a comment in the file, which travels with it and names its numbers."""
    if covered is None:
        covered = merge(s for e in doc.history if isinstance(e, (Iteration, IterationRange)) for s in e.spans)
    top = highest(covered)
    if not missing(covered, top):
        return [], []
    open_gaps = missing(covered + acknowledged_gaps(doc), top)
    return open_gaps, missing(covered + open_gaps, top)
