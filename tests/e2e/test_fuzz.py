"""Fuzzing: real state files mutated the way agents and editors damage them, through parse → compact → render → parse.

Hypothesis draws a file from the real corpus and applies up to five mutations: cut it anywhere, duplicate, drop or
shuffle sections, corrupt Machine State rows, inject code fences, HTML blocks and indented code (some holding fake
headings and tables), change line endings (CRLF, CR, mixed), add a BOM, NULs or a mangled emoji.  For every
mutant:

- parsing never raises and renders back byte for byte;
- :func:`statefile.model.document.read_machine_state` (the scheduler's fast path) agrees with the full parse;
- compaction either fits the budget with every invariant of tests/policy/test_compaction.py (exactly-once
  coverage, verbatim archive, Machine State and maintainer text untouched, idempotence) or raises the documented
  BudgetError; its result renders and re-parses to the same document;
- recording an iteration (the update rules) and compacting the result raise nothing but documented errors, and
  the new count reads back.

Bytes that are not UTF-8 on disk must be refused with InvalidDataError by every reader and never rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from conftest import all_corpus_files, examples, read_raw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from policy import test_compaction as properties
from upstream import meaningful, upstream_machine_state

from statefile.app.writing import compact_program, record_iteration
from statefile.errors import BudgetError, InvalidDataError, StatefileError
from statefile.model.document import parse, read_machine_state
from statefile.model.text import split_lines
from statefile.policy.compaction import CompactionPolicy, compact
from statefile.policy.rules import RecordRequest, record
from statefile.store import FolderStore
from statefile.store.atomic import read_state_file

pytestmark = pytest.mark.slow  # hypothesis over mutated corpus files

CORPUS = [read_raw(path) for path in all_corpus_files()]
BUDGETS = (30720, 8192, 3000)
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
# How many examples each property runs; the module docstring's counts come from these.
EXAMPLES = {"pipeline": 600, "record": 300, "state": 1000, "bytes": 100}

# -- mutations ----------------------------------------------------------------------------------------------------

FENCES = (
    "```\n## ⚙️ Machine State\n| Iteration Count | 999 |\n```\n",
    "```python\n### Iteration 9999 — fake\n## 📊 Iteration History\n",  # never closed
    "~~~\n## 📚 Lessons Learned\n- fenced lesson\n~~~\n",
    "    ## indented, so code\n    | Paused | true |\n",
    "<!--\n## ⚙️ Machine State\n| Paused | true |\n-->\n",
    "<details>\n\n## 🎯 Current Priorities\n</details>\n",
    "````\n```\n## nested\n````\n",
)
ROW_DAMAGE = (
    "| Iteration Count | not a number |",
    "| Iteration Count | 99999999999999999999999999 |",
    "| Iteration Count |  |",
    "| Paused | TRUE |",
    "| Recent Statuses | accepted,,rejected , ERROR |",
    "| Best Metric | NaN |",
    "| Best Metric | -inf |",
    "Iteration Count | 5",
    "| Iteration Count | 7 | extra | cells |",
    "|",
    "| | |",
    "|---|---|---|",
    "| Last Run | 2026-13-45T99:99:99Z |",
    "| Metric Direction | sideways |",
)


def _sections(text: str) -> list[str]:
    return [section.text for section in parse(text).sections]


@st.composite
def mutant(draw: st.DrawFn) -> str:
    """A corpus file with one to five mutations applied."""
    text = draw(st.sampled_from(CORPUS))
    for op in draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=5)):
        text = op(draw, text)
    return text


def cut(draw: st.DrawFn, text: str) -> str:
    a = draw(st.integers(0, len(text)))
    b = draw(st.integers(a, len(text)))
    return draw(st.sampled_from([text[:a], text[a:], text[:a] + text[b:]]))


def duplicate_section(draw: st.DrawFn, text: str) -> str:
    parts = _sections(text)
    if not parts:
        return text
    copy = parts[draw(st.integers(0, len(parts) - 1))]
    parts.insert(draw(st.integers(0, len(parts))), copy)
    return "".join(parts)


def drop_section(draw: st.DrawFn, text: str) -> str:
    parts = _sections(text)
    if len(parts) < 2:
        return text
    del parts[draw(st.integers(0, len(parts) - 1))]
    return "".join(parts)


def shuffle_sections(draw: st.DrawFn, text: str) -> str:
    parts = _sections(text)
    if parts and not parts[-1].endswith(("\n", "\r")):
        parts[-1] += "\n"  # a section moved off the end would otherwise glue onto the next heading
    return "".join(draw(st.permutations(parts)))


def corrupt_rows(draw: st.DrawFn, text: str) -> str:
    lines = split_lines(text)
    rows = [i for i, line in enumerate(lines) if line.lstrip().startswith("|")]
    if not rows:
        return text
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(rows))
        damage = draw(st.sampled_from(ROW_DAMAGE))
        how = draw(st.sampled_from(["replace", "insert", "delete"]))
        if how == "replace":
            lines[i] = damage + "\n"
        elif how == "insert":
            lines.insert(i, damage + "\n")
        else:
            lines[i] = ""
    return "".join(lines)


def inject_block(draw: st.DrawFn, text: str) -> str:
    lines = split_lines(text)
    at = draw(st.integers(0, len(lines)))
    return "".join([*lines[:at], draw(st.sampled_from(FENCES)), *lines[at:]])


def line_endings(draw: st.DrawFn, text: str) -> str:
    plain = text.replace("\r\n", "\n").replace("\r", "\n")
    style = draw(st.sampled_from(["crlf", "cr", "mixed"]))
    if style == "crlf":
        return plain.replace("\n", "\r\n")
    if style == "cr":
        return plain.replace("\n", "\r")
    flips = draw(st.lists(st.booleans(), min_size=1, max_size=64))
    out = [line.replace("\n", "\r\n") if flips[i % len(flips)] else line for i, line in enumerate(split_lines(plain))]
    return "".join(out)


def odd_characters(draw: st.DrawFn, text: str) -> str:
    choice = draw(st.sampled_from(["bom", "nul", "emoji", "zero-width", "tabs"]))
    if choice == "bom":
        return "\ufeff" + text
    if choice == "emoji":
        return text.replace("⚙️", "\ufffd\ufffd").replace("📊", "??")
    if choice == "tabs":
        return text.replace("## ", "\t## ", draw(st.integers(1, 3)))
    at = draw(st.integers(0, len(text)))
    return text[:at] + ("\x00" if choice == "nul" else "\u200b") + text[at:]


OPS = (cut, duplicate_section, drop_section, shuffle_sections, corrupt_rows, inject_block, line_endings, odd_characters)

# -- properties ---------------------------------------------------------------------------------------------------


@contextmanager
def upstream_reads_as_statefile() -> Iterator[None]:
    """Within: the invariants compare Machine State as statefile reads it (it must still be untouched)."""
    saved = properties.upstream_machine_state
    properties.upstream_machine_state = lambda content: parse(content).machine_state
    try:
        yield
    finally:
        properties.upstream_machine_state = saved


@settings(max_examples=examples(EXAMPLES["pipeline"]))
@given(text=mutant(), budget=st.sampled_from(BUDGETS))
def test_mutated_files_survive_parse_compact_render_parse(text: str, budget: int) -> None:
    doc = parse(text)
    assert doc.render() == text
    assert read_machine_state(text) == doc.machine_state
    _ = (doc.warnings, doc.history, doc.sections, doc.highest_iteration)  # every view is total
    policy = CompactionPolicy(max_bytes=budget, today=date(2026, 6, 1))
    try:
        result = compact(doc, policy)
    except BudgetError as error:
        assert "\n" not in str(error) and "max_bytes" in str(error)  # documented: one line saying what to raise
        return
    except InvalidDataError as error:
        # Documented: a fence or HTML block that never closes makes the rest of the file code; refused.
        assert doc.unclosed_block is not None and "never closed" in str(error) and "\n" not in str(error)
        return

    assert doc.render() == text, "compact() modified its input"
    if meaningful(upstream_machine_state(text)) == doc.machine_state:
        properties.check_invariants(doc, result, policy)
    else:
        # The mutation fooled the upstream regex (a fenced "## ⚙️ Machine State", a drifted real heading): moving
        # history text may change what that regex reads, so hold compaction to statefile's reading instead.
        with upstream_reads_as_statefile():
            properties.check_invariants(doc, result, policy)
    again = parse(result.document.render())
    assert again.render() == result.document.render()
    assert again.machine_state == doc.machine_state
    assert read_machine_state(again.render()) == again.machine_state


@settings(max_examples=examples(EXAMPLES["record"]))
@given(
    text=mutant(),
    status=st.sampled_from(["accepted", "rejected", "error", "pending-ci"]),
    # Subnormal floats (below 1e-308) are refused as no measurement (a usage error before any file is touched).
    metric=st.one_of(st.none(), st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_subnormal=False)),
    budget=st.sampled_from(BUDGETS),
)
def test_recording_on_a_mutated_file_raises_only_documented_errors(
    text: str, status: str, metric: float | None, budget: int
) -> None:
    doc = parse(text)
    request = RecordRequest(
        status=status, metric=metric, change="fuzzed change", notes="fuzzed notes.", new_status=status == "pending-ci"
    )
    try:
        recorded = record(doc, request, program="fuzz", now=NOW)
        number = recorded.history[0].covers[0]
        result = compact(recorded, CompactionPolicy(max_bytes=budget, program="fuzz", today=date(2026, 6, 1)))
    except StatefileError as error:
        assert "\n" not in str(error)
        return  # documented: BudgetError, or InvalidDataError for a fence or HTML block that never closes
    final = parse(result.document.render())
    assert final.machine_state["iteration_count"] == number
    assert final.machine_state["recent_statuses"][-1] == status
    assert read_machine_state(final.render()) == final.machine_state
    assert result.document.size <= budget


TOKENS = (
    "#",
    "## ",
    "### ",
    "## ⚙️ Machine State",
    "## Machine",
    " State",
    "\n",
    "\r",
    "\r\n",
    "|",
    " | ",
    "-",
    "```",
    "~~~",
    "<!--",
    "-->",
    "<div>",
    "    ",
    "\t",
    "\ufeff",
    "\x00",
    "x",
    "Iteration Count",
    "7",
    "—",
)


@settings(max_examples=examples(EXAMPLES["state"]))
@given(text=st.lists(st.sampled_from(TOKENS), max_size=80).map("".join))
def test_the_machine_state_fast_path_agrees_with_the_full_parse(text: str) -> None:
    assert read_machine_state(text) == parse(text).machine_state


# -- bytes that are not UTF-8 ---------------------------------------------------------------------------------------

BAD_BYTES = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\xc0\xaf", b"\x80\x80")


@settings(
    max_examples=examples(EXAMPLES["bytes"]),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=st.sampled_from(CORPUS), bad=st.sampled_from(BAD_BYTES), where=st.floats(0, 1))
def test_invalid_utf8_on_disk_is_refused_and_never_rewritten(
    tmp_path_factory: pytest.TempPathFactory, text: str, bad: bytes, where: float
) -> None:
    folder = tmp_path_factory.mktemp("bytes")
    data = text.encode("utf-8", "surrogateescape")
    at = int(len(data) * where)
    raw = data[:at] + bad + data[at:]
    path = folder / "perf.md"
    path.write_bytes(raw)
    store = FolderStore(folder)
    policy = CompactionPolicy(max_bytes=3000)
    request = RecordRequest(status="accepted", metric=1.0)
    for attempt in (
        lambda: store.read("perf"),
        lambda: read_state_file(path),
        lambda: compact_program(store, "perf", policy, dry_run=False),
        lambda: record_iteration(store, "perf", request, policy, now=NOW),
        store.read_all,
    ):
        with pytest.raises(InvalidDataError, match="not valid UTF-8"):
            attempt()
    assert path.read_bytes() == raw
    assert sorted(p.name for p in Path(folder).iterdir() if p.name != ".statefile.lock") == ["perf.md"]


# -- what the fuzzer found, pinned as plain examples --------------------------------------------------------------

LESSON_WITH_FENCE = """# Autoloop: perf

## ⚙️ Machine State

| Field | Value |
|-------|-------|
| Iteration Count | 3 |

## 📚 Lessons Learned

- Use the table below.
```
| not | a row |

## not a heading
```
- Second lesson.

## 📊 Iteration History

### Iteration 3 — 2026-01-03 10:00 UTC

- **Status**: ✅ Accepted
"""


def test_a_fenced_block_is_never_cut_by_a_bullet() -> None:
    """Found by fuzzing: a blank or ``|`` line inside a fence cut the bullet, and pruning half a fence turned the
    rest of the file into code (sections vanished).  A bullet is what the markdown scanner says it is: a fence at
    the left margin after a bullet ends the list and is a block of its own, so no bullet holds part of it."""
    doc = parse(LESSON_WITH_FENCE)
    first, second = doc.list_items("lessons")
    assert first.text == "- Use the table below.\n" and second.text == "- Second lesson.\n"
    section = doc.section("lessons")
    assert section is not None
    between = "".join(section.lines[first.end : second.start])
    assert between.count("```") == 2  # the whole fence, outside both bullets
    result = properties.check(LESSON_WITH_FENCE, CompactionPolicy(max_bytes=300))
    assert result is None or [s.kind for s in result.document.sections] == [s.kind for s in doc.sections]


def test_rows_added_after_a_table_without_a_final_newline_stay_separate() -> None:
    """Found by fuzzing: new rows copied the missing line ending of the last row and were glued together."""
    text = "# Autoloop: x\n\n## ⚙️ Machine State\n\n| Field | Value |\n|---|---|\n| Iteration Count | 3 |"
    recorded = record(parse(text), RecordRequest(status="error"), program="x", now=NOW)
    state = parse(recorded.render()).machine_state
    assert state["iteration_count"] == 4 and state["consecutive_errors"] == 1 and state["recent_statuses"] == ["error"]
    assert meaningful(upstream_machine_state(recorded.render())) == state


@pytest.mark.parametrize("opener", ["```python", "~~~", "<!--"])
def test_a_block_that_never_closes_is_refused_not_edited(opener: str) -> None:
    """Found by fuzzing: the new entry (or section) went inside the open block and vanished, or compaction moved
    the opening line and the rest of the file turned back into sections."""
    text = LESSON_WITH_FENCE.replace("- Second lesson.\n", f"- Second lesson.\n{opener}\n", 1)
    doc = parse(text)
    assert doc.unclosed_block is not None
    for attempt in (
        lambda: record(doc, RecordRequest(status="accepted"), program="perf", now=NOW),
        lambda: compact(doc, CompactionPolicy(max_bytes=300)),
    ):
        with pytest.raises(InvalidDataError, match=r"never closed.*close it"):
            attempt()
    assert doc.render() == text
    assert parse(LESSON_WITH_FENCE).unclosed_block is None  # a closed fence, even on the last lines, is fine
    assert parse("# t\n\n```\ncode\n```").unclosed_block is None


def test_the_block_scan_leaves_the_garbage_collector_as_it_found_it() -> None:
    """scan_blocks pauses the cyclic collector while markdown-it allocates its tokens (linear time on big files)."""
    import gc

    from statefile.model.blocks import scan_blocks

    assert gc.isenabled()
    assert any(block.kind == "heading" for block in scan_blocks(CORPUS[0] if CORPUS else "# t\n"))
    assert gc.isenabled()
    gc.disable()
    try:
        scan_blocks("# t\n\n```\nx\n")
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()
