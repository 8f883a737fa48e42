"""Compaction's guarantees, checked on every corpus file, on synthetic files of 15 to 10,000 iterations and on
hypothesis-made messy histories (overlapping ranges, entries inside ranges, duplicates, opaque entries).

The guarantees (see statefile.policy.compaction): output within budget or a clean BudgetError; every iteration
number the input covers is covered exactly once by the output; everything removed is in the archive verbatim;
Machine State reads back identically through the upstream scheduler's logic; compaction is idempotent;
maintainer-owned sections are byte-identical; the newest ``keep_recent`` entries are untouched when not aggressive.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from datetime import date
from itertools import pairwise
from pathlib import Path

import pytest
from conftest import corpus_params, examples, read_raw
from hypothesis import given, settings
from hypothesis import strategies as st
from upstream import upstream_machine_state

from statefile.errors import BudgetError
from statefile.model.document import StateDocument, parse
from statefile.model.history import Iteration, IterationRange
from statefile.model.sections import MAINTAINER_OWNED
from statefile.model.synthetic import synthetic_state
from statefile.model.template import new_state_file
from statefile.policy.compaction import CompactionPolicy, CompactionResult, compact
from statefile.policy.pruning import is_pinned

BUDGETS = (30720, 8192)
_TRAILER = re.compile(r"(?:(?:\r\n|\r|\n)(?:[ \t]*|\s{0,3}-{3,}\s*))*\Z")
_MARKER = re.compile(r"\s*\*\(\+\d+ similar in archive\)\*")


def core(raw: str) -> str:
    """An entry's text without trailing blank lines and section rules (those belong to the section, not it)."""
    return _TRAILER.sub("", raw)


class Verbatim:
    """Finds whether a text occurs in the archive starting at a line start, in linear total time."""

    def __init__(self, archive: str) -> None:
        self.archive = archive
        self.starts: dict[str, list[int]] = defaultdict(list)
        offset = 0
        for line in archive.splitlines(keepends=True):
            self.starts[line.rstrip("\r\n")].append(offset)
            offset += len(line)

    def __contains__(self, text: str) -> bool:
        first = text.splitlines()[0] if text else ""
        return any(self.archive.startswith(text, at) for at in self.starts.get(first, ()))


def intervals(doc: StateDocument) -> list[tuple[int, int]]:
    """Every iteration number a document's history covers, as one interval per entry number/range."""
    spans: list[tuple[int, int]] = []
    for entry in doc.history:
        if isinstance(entry, IterationRange):
            spans.append((entry.first, entry.last))
        elif isinstance(entry, Iteration):
            spans.extend((n, n) for n in entry.covers)
    return spans


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _maintainer_texts(doc: StateDocument) -> list[tuple[str, str]]:
    """The text of every maintainer-owned section, without the history entries the parser placed in it.

    Entries sit under a maintainer-owned section only when the history heading is missing; they are cut off at
    the line where the parser says they start (``doc.history_start``), never by matching text: a section may
    hold a verbatim copy of the entries that is its own text (a heading swallowed by an HTML block, a pasted
    copy), and compaction must leave that copy alone.
    """
    start = doc.history_start
    out = []
    for index, section in enumerate(doc.sections):
        if section.kind in MAINTAINER_OWNED:
            held = start is not None and start[0] == index
            text = "".join(section.lines[: start[1]]) if start is not None and held else section.text
            out.append((section.kind, text))
    return out


def protected_entries(doc: StateDocument, keep: int) -> list[str]:
    """The newest ``keep`` detailed entries outside every range, not sharing a number with another entry.

    Entries sharing numbers take one slot together (compaction keeps one of them) and are not checked; an entry
    that touches a range, or one widened by an entry it absorbed, is not free.
    """
    slots: list[tuple[set[int], list[Iteration]]] = []
    slot_of: dict[int, int] = {}
    for entry in sorted(doc.iterations, key=lambda e: -max(e.covers)):
        index = next((slot_of[n] for n in entry.covers if n in slot_of), None)
        if index is None:
            index = len(slots)
            slots.append((set(), []))
        slots[index][0].update(entry.covers)
        slots[index][1].append(entry)
        slot_of.update(dict.fromkeys(entry.covers, index))
    spans = [(e.first, e.last) for e in doc.ranges]
    for numbers, members in slots:
        if not any(set(m.covers) >= numbers for m in members):
            spans.append((min(numbers), max(numbers)))  # duplicates no single entry resolves fold into a range
    free = [s for s in slots if any(set(m.covers) >= s[0] for m in s[1])]
    changed = True
    while changed:
        merged = _union(spans)
        starts = [a for a, _ in merged]
        inside = [s for s in free if any((k := bisect_right(starts, n) - 1) >= 0 and n <= merged[k][1] for n in s[0])]
        spans.extend((min(s[0]), max(s[0])) for s in inside)
        free = [s for s in free if s not in inside]
        changed = bool(inside)
    return [core(members[0].raw) for _, members in free[:keep] if len(members) == 1]


def check_invariants(before: StateDocument, result: CompactionResult, policy: CompactionPolicy) -> None:
    """Assert every compaction guarantee for one input and its result."""
    after = result.document
    archive = Verbatim(result.archive)
    assert after.size <= policy.max_bytes
    assert result.report.bytes_after == after.size
    # Every number the input covers is covered exactly once; the output covers nothing twice.
    out_spans = sorted(intervals(after))
    for (_, b1), (a2, _) in pairwise(out_spans):
        assert a2 > b1, f"output covers {a2} twice"
    union = _union(out_spans)
    for a, b in intervals(before):
        assert any(u <= a and b <= v for u, v in union), f"iterations {a}–{b} lost"
    # Everything removed is in the archive verbatim.
    kept = Counter(core(e.raw) for e in after.history)
    for entry in before.history:
        text = core(entry.raw)
        if kept[text]:
            kept[text] -= 1
        else:
            assert text in archive, f"removed entry not archived: {text[:80]!r}"
    for kind in ("lessons", "foreclosed"):
        remaining = {item.text.rstrip("\r\n") for item in after.list_items(kind)}
        unmarked = {_MARKER.sub("", t) for t in remaining}
        for item in before.list_items(kind):
            text = item.text.rstrip("\r\n")
            if text in remaining or _MARKER.sub("", text) in unmarked:
                continue
            assert text in archive, f"removed {kind} bullet not archived: {text[:80]!r}"
            assert not is_pinned(text), "a pinned bullet was removed"
    if not result.report.changed:
        assert result.archive == ""
    # Machine State reads back identically; maintainer-owned text is byte-identical.
    assert upstream_machine_state(after.render()) == upstream_machine_state(before.render())
    assert after.machine_state == before.machine_state
    assert _maintainer_texts(after) == _maintainer_texts(before)
    # The newest keep_recent entries are untouched unless aggressive mode ran.
    if not result.report.aggressive and not result.report.last_resort:
        out_cores = {core(e.raw) for e in after.history}
        for text in protected_entries(before, policy.keep_recent):
            assert text in out_cores, f"a recent entry changed: {text[:80]!r}"
    # Idempotent: a second compaction changes nothing and archives nothing.
    again = compact(after, policy)
    assert again.document.render() == after.render()
    assert again.archive == ""
    assert not again.report.moved


def check(text: str, policy: CompactionPolicy) -> CompactionResult | None:
    """Compact ``text`` and check the invariants; a BudgetError is fine when it is clean and one line."""
    before = parse(text)
    try:
        result = compact(before, policy)
    except BudgetError as error:
        message = str(error)
        assert "\n" not in message and "max_bytes" in message and "Machine State" in message
        return None
    assert before.render() == text, "compact() modified its input"
    check_invariants(before, result, policy)
    return result


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("path", corpus_params())
def test_corpus_files_compact_correctly(path: Path, budget: int) -> None:
    check(read_raw(path), CompactionPolicy(max_bytes=budget))


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("iterations", [15, 16, 40, 250])
@pytest.mark.parametrize("agent_ranges", [0, 4])
def test_synthetic_files_compact_correctly(iterations: int, agent_ranges: int, budget: int) -> None:
    text = synthetic_state("perf", iterations, seed=iterations, agent_ranges=agent_ranges, lessons=25)
    result = check(text, CompactionPolicy(max_bytes=budget))
    assert result is not None


@pytest.mark.slow
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("iterations", [1000, 10_000])
def test_large_synthetic_files_compact_correctly(iterations: int, budget: int) -> None:
    text = synthetic_state("perf", iterations, direction="lower", lessons=40, foreclosed=30)
    result = check(text, CompactionPolicy(max_bytes=budget))
    assert result is not None
    assert result.report.folded_iterations >= iterations - 10


@settings(max_examples=examples(80))
@given(
    iterations=st.integers(min_value=0, max_value=300),
    seed=st.integers(min_value=0, max_value=10_000),
    lessons=st.integers(min_value=0, max_value=40),
    direction=st.sampled_from(["higher", "lower"]),
    agent_ranges=st.integers(min_value=0, max_value=8),
    budget=st.sampled_from(BUDGETS),
)
def test_synthetic_property(
    iterations: int, seed: int, lessons: int, direction: str, agent_ranges: int, budget: int
) -> None:
    text = synthetic_state(
        "prop", iterations, seed=seed, lessons=lessons, direction=direction, agent_ranges=agent_ranges
    )
    check(text, CompactionPolicy(max_bytes=budget))


# -- messy histories: what agents actually write ------------------------------------------------------------------

_RANGE_SHAPES = (
    "### Iters {a}–{b} — ✅ (metrics {x}→{y}): work {a}",
    "### Iters {a}-{b} -- 2026-05-16 -- ✅ (metrics {x}->{y}): batch {a}",
    "### Iterations {a}–{b} — Various features (condensed)\n- Metrics {x}→{y} across features.",
    "- Iters {a}-{b}: tools not registered",
    "### Iters {a}–{b} (except {a}) — ⚠️ Error: blocked.",
)


@st.composite
def messy_history(draw: st.DrawFn) -> str:
    """A state file whose history mixes entries, overlapping ranges, duplicates and opaque headings."""
    parts: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=30))):
        kind = draw(st.sampled_from(["entry", "entry", "entry", "partial", "pair", "range", "opaque"]))
        n = draw(st.integers(min_value=1, max_value=60))
        if kind in ("entry", "partial"):
            status = draw(st.sampled_from(["✅ Accepted", "❌ Rejected", "⚠️ Error", "⏳ pending CI"]))
            metric = draw(st.integers(min_value=0, max_value=500))
            suffix = " (partial)" if kind == "partial" else ""
            parts.append(
                f"### Iteration {n}{suffix} — 2026-04-{n % 28 + 1:02d} 10:00 UTC — [Run](https://x.invalid/{n})\n\n"
                f"- **Status**: {status}\n- **Change**: change {n}\n"
                f"- **Metric**: {metric} (previous best: {metric - 1}, delta: +1)\n- **Notes**: note {n}.\n\n"
            )
        elif kind == "pair":
            parts.append(f"### Iteration {n} & {n + 1} — ✅ two at once\n\n")
        elif kind == "range":
            b = n + draw(st.integers(min_value=0, max_value=25))
            shape = draw(st.sampled_from(_RANGE_SHAPES))
            parts.append(shape.format(a=n, b=b, x=n * 2, y=b * 2) + "\n\n")
        else:
            parts.append(f"### Notes from run {n}\n\nSomething the agent wrote.\n\n")
    text = new_state_file("messy", iteration_count=60, metric_direction=draw(st.sampled_from(["higher", "lower"])))
    lesson_pool = ["Use typed arrays.", "📌 Never force-push.", "Use typed arrays!", "Old tip (expires 2026-01-01)."]
    lessons = draw(st.lists(st.sampled_from(lesson_pool), max_size=30))
    if lessons:
        text = text.replace(
            "across iterations.\n\n- *(none yet)*", "across iterations.\n\n" + "\n".join(f"- {x}" for x in lessons), 1
        )
    avenues = draw(st.integers(min_value=0, max_value=60))
    if avenues:
        bullets = [
            f"- {'📌 ' if i % 17 == 0 else ''}Caching module {i % 7} globally: invalidation bugs seen in run {i}."
            for i in range(avenues)
        ]
        text = text.replace("with reasons.\n\n- *(none yet)*", "with reasons.\n\n" + "\n".join(bullets), 1)
    return text.replace("*(No iterations yet.)*\n", "".join(parts), 1)


@settings(max_examples=examples(300))
@given(text=messy_history(), budget=st.sampled_from((30720, 8192, 3000, 2000)))
def test_messy_history_property(text: str, budget: int) -> None:
    check(text, CompactionPolicy(max_bytes=budget, today=date(2026, 6, 1)))


@settings(max_examples=examples(60))
@given(text=messy_history())
def test_messy_history_with_small_keep(text: str) -> None:
    check(text, CompactionPolicy(keep_recent=2, keep_recent_aggressive=1, max_ranges=2, max_ranges_aggressive=1))
