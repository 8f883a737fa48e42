"""render_view: never over budget (corpus × budgets, hypothesis), drop order, levels, notice, shared lessons."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SOAK, corpus_params, examples, fixture_text, read_raw, real_file
from hypothesis import given, settings
from hypothesis import strategies as st

from statefile.errors import UsageError
from statefile.model.document import StateDocument, parse
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file
from statefile.views.render import CORE_BUDGET, MIN_BUDGET, NEWEST_IN_CORE, TOOLS, entry_line, render_view

LEVELS = ("core", "index", "timeline", "full")


def make_doc(iterations: int = 30, lessons: int = 10, foreclosed: int = 4, *, pinned: int = 0) -> StateDocument:
    """A template file with ``iterations`` entries (newest first), lessons, foreclosed avenues and priorities."""
    doc = parse(new_state_file("perf", goal="Make it fast", metric="ops/s"))
    doc = doc.with_fields(
        {"Iteration Count": iterations, "Best Metric": 100 + iterations, "Last Run": "2026-01-02T03:04:05Z"}
    )
    for n in range(1, iterations + 1):
        doc = doc.with_entry(
            render_iteration(
                number=n,
                when=f"2026-01-{1 + n % 28:02d} 10:00",
                status="accepted" if n % 3 else "rejected",
                change=f"change number {n} " + "x" * 120,
                metric=str(100 + n),
                previous_best=str(99 + n),
                delta="+1",
                notes=f"notes for {n} " + "y" * 150,
            )
        )
    for n in range(1, lessons + 1):
        doc = doc.with_lesson(("📌 " if n <= pinned else "") + f"lesson {n} " + "z" * 80)
    for n in range(1, foreclosed + 1):
        doc = doc.with_foreclosed(f"avenue {n} ruled out because " + "w" * 60)
    doc = doc.with_future_direction("try a faster hash")
    return doc


def notice_of(text: str) -> str:
    return text.rstrip("\n").rsplit("\n", 1)[-1]


# -- the budget is never exceeded -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_never_over_budget(path: Path) -> None:
    doc = parse(read_raw(path))
    full = render_view(doc, program="p", budget=50_000).full_chars
    # Ten budgets spread up to the whole view, and every 7th character (every 29th, from a per-file start, unless
    # STATEFILE_SOAK) around the point where everything fits.
    near = range(max(500, full - 300), full + 5, 7) if SOAK else range(max(500, full - 300) + full % 29, full + 5, 29)
    budgets = [*range(500, full + 1, max(1, (full - 500) // 10)), *near, full]
    for budget in budgets:
        for level in LEVELS:
            view = render_view(doc, program="p", budget=budget, level=level)
            assert view.chars == len(view.text) <= budget, (budget, level)
            assert view.text.endswith("\n")
            assert notice_of(view.text).startswith("[statefile]")


@pytest.mark.slow
@pytest.mark.parametrize("path", corpus_params())
def test_corpus_every_budget_step(path: Path) -> None:
    """Budgets from the minimum to past the whole view, about 60 steps per file (every 61st with STATEFILE_SOAK)."""
    doc = parse(read_raw(path))
    full = render_view(doc, program="p", budget=100_000).full_chars
    step = 61 if SOAK else max(61, (full + 200 - MIN_BUDGET) // 60)
    for budget in range(MIN_BUDGET, full + 200, step):
        for level in LEVELS:
            assert render_view(doc, program="p", budget=budget, level=level).chars <= budget


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_full_chars_shows_everything(path: Path) -> None:
    doc = parse(read_raw(path))
    view = render_view(doc, program="p", budget=100_000)
    assert view.omitted == []
    assert notice_of(view.text) == "[statefile] complete: nothing left out"
    exact = render_view(doc, program="p", budget=view.full_chars)
    assert exact.omitted == [] and exact.text == view.text
    assert view.chars == view.full_chars
    # Every lesson bullet and every entry heading of the file is in the complete view.
    for item in doc.list_items("lessons"):
        if not item.is_placeholder:
            assert item.text.splitlines()[0].rstrip().replace("\ufffd", "") in view.text.replace("\ufffd", "")
    for entry in doc.history:
        assert entry.heading.rstrip() in view.text


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_index_is_small(path: Path) -> None:
    view = render_view(parse(read_raw(path)), program="program", level="index")
    assert view.chars <= 1000
    assert "- status:" in view.text or "status: unknown" in view.text


_LINES = st.sampled_from(
    [
        "# Autoloop: x",
        "## ⚙️ Machine State",
        "## 🎯 Current Priorities",
        "## 📚 Lessons Learned",
        "## 🚧 Foreclosed Avenues",
        "## 📊 Iteration History",
        "## Something else",
        "### Iteration 7 — 2026-01-01 10:00 UTC",
        "### Iters 1–6 — ✅ (metrics 1→5): fine",
        "- **Status**: ✅ Accepted",
        "| Iteration Count | 7 |",
        "| Field | Value |",
        "- 📌 pinned lesson",
        "- a lesson",
        "```",
        "~~~~",
        "---",
        "<!-- comment -->",
        "- *(none yet)*",
        "",
    ]
)
_FREE = st.text(st.characters(blacklist_categories=["Cs"]), max_size=300) | st.just("\udcff bad byte")
_LONG = st.integers(0, 3000).map(lambda n: "- " + "L" * n)


@settings(max_examples=examples(300))
@given(
    lines=st.lists(_LINES | _FREE | _LONG, max_size=80),
    newline=st.sampled_from(["\n", "\r\n"]),
    budget=st.integers(MIN_BUDGET, 50_000),
    level=st.sampled_from(LEVELS),
    program=st.text(min_size=1, max_size=300),
)
def test_hypothesis_never_over_budget(lines: list[str], newline: str, budget: int, level: str, program: str) -> None:
    doc = parse(newline.join(lines))
    shared = parse("# Shared lessons\n\n## 📚 Lessons Learned\n\n- shared one\n- 📌 shared pinned\n")
    view = render_view(doc, program=program, budget=budget, level=level, shared=shared)
    assert len(view.text) <= budget
    assert "\r" not in view.text
    assert all(not "\ud800" <= ch <= "\udfff" for ch in view.text)
    view.text.encode("utf-8")


# -- what is kept, in which order -------------------------------------------------------------------------------


def test_machine_state_and_priorities_always_first() -> None:
    doc = make_doc()
    view = render_view(doc, program="perf", budget=2000)
    assert view.text.startswith("# Autoloop: perf — memory view\n\n## ⚙️ Machine State\n| Field | Value |")
    assert "| Iteration Count | 30 |" in view.text
    assert "## 🎯 Current Priorities" in view.text
    # Template boilerplate is not shown.
    assert "Updated automatically" not in view.text
    assert "<!--" not in view.text
    assert "\n---\n" not in view.text


def test_drop_order_entries_lessons_foreclosed_older_entries_ranges() -> None:
    doc = make_doc(iterations=30, lessons=10, foreclosed=4, pinned=1)
    full = render_view(doc, program="perf", budget=100_000)
    assert full.omitted == []
    sizes = {}
    for budget in range(1000, full.full_chars, 100):
        view = render_view(doc, program="perf", budget=budget)
        text = view.text
        has = {
            "pinned": "📌 lesson 1 " in text,
            "newest": "### Iteration 30 —" in text,
            "third": "### Iteration 28 —" in text,
            "lessons": "- lesson 10 " in text and "- lesson 2 " in text,
            "foreclosed": "avenue 4 ruled out" in text and "avenue 1 ruled out" in text,
            "older": "### Iteration 27 —" in text or "- #27 " in text,
            "future": "try a faster hash" in text,
        }
        for key, value in has.items():
            if value and key not in sizes:
                sizes[key] = budget
    order = ["pinned", "newest", "third", "lessons", "foreclosed", "older", "future"]
    firsts = [sizes[k] for k in order]
    assert firsts == sorted(firsts), sizes


def test_older_entries_degrade_to_one_line_and_stay_contiguous() -> None:
    doc = make_doc(iterations=40, lessons=0, foreclosed=0)
    # Program Info is shown ahead of the history; the budget pays for it so the history gets 6000 as before.
    whole = render_view(doc, program="perf", budget=100_000).text
    start = whole.index("\n## 📋 Program Info\n")
    info = len(whole[start : whole.index("\n## ", start + 1)])
    view = render_view(doc, program="perf", budget=6000 + info)
    text = view.text
    shown = [n for n in range(1, 41) if f"### Iteration {n} —" in text or f"- #{n} " in text]
    # A newest-first run without gaps.
    assert shown == list(range(41 - len(shown), 41))
    oldest = shown[0]
    assert f"- #{oldest} ✅ accepted · 2026-01-{1 + oldest % 28:02d} · metric {100 + oldest}: change number" in text
    assert any("one line each here" in o for o in view.omitted)
    notice = notice_of(text)
    assert "statefile expand perf " in notice
    assert f"statefile render perf --budget {view.full_chars}" in notice


def test_truncated_always_parts_say_so() -> None:
    doc = make_doc()
    doc = doc.with_field("Pause Reason", "p" * 5000)
    view = render_view(doc, program="perf", budget=600)
    assert view.chars <= 600
    assert "p" * 100 not in view.text  # the over-long row is left out whole, never cut mid-line
    assert "| Iteration Count | 30 |" in view.text
    assert any("Machine State" in o for o in view.omitted)
    assert notice_of(view.text).startswith("[statefile]")


def test_shared_lessons_included_for_every_program() -> None:
    shared = parse("# Shared lessons\n\n## 📚 Lessons Learned\n\n- Use the cache (from perf)\n")
    for program in ("perf", "size"):
        view = render_view(make_doc(iterations=2), program=program, shared=shared)
        assert "## 📚 Shared lessons (_shared.md)\n- Use the cache (from perf)" in view.text
    no_lessons = parse(new_state_file("x").replace("## 📚 Lessons Learned", "## Notes"))
    assert "Use the cache" in render_view(no_lessons, program="x", shared=shared).text


def test_timeline_one_line_per_entry() -> None:
    doc = make_doc(iterations=12, lessons=3)
    view = render_view(doc, program="perf", level="timeline", budget=50_000)
    lines = [line for line in view.text.splitlines() if line.startswith("- #")]
    assert [line.split()[1] for line in lines] == [f"#{n}" for n in range(12, 0, -1)]
    assert all(len(line) <= 140 for line in lines)
    assert "lesson 1" not in view.text
    assert "| Iteration Count | 12 |" in view.text
    assert "3 lessons" in view.omitted
    assert "--level full" in notice_of(view.text)


def test_index_summary() -> None:
    doc = make_doc(iterations=12, lessons=3, foreclosed=2)
    doc = doc.with_fields({"Paused": True, "Pause Reason": "CI broken"})
    view = render_view(doc, program="perf", level="index")
    assert view.chars < 800
    text = view.text
    assert "- status: paused (CI broken); iteration 12" in text
    assert "- best metric: 112 (higher is better)" in text
    assert "- memory: 12 iterations, 0 ranges (up to #12), 3 lessons, 2 foreclosed" in text
    assert "- last outcomes: #12 ❌ rejected" in text and "  #11 ✅ accepted" in text and "  #10 " in text
    assert "#9 " not in text
    assert notice_of(text).startswith("[statefile] index only — more: statefile render perf --level timeline")


def test_small_text_views_and_errors() -> None:
    doc = parse("")
    for level in LEVELS:
        view = render_view(doc, program="empty", level=level)
        assert view.chars <= 8000
    with pytest.raises(UsageError, match="unknown level"):
        render_view(doc, program="x", level="everything")
    with pytest.raises(UsageError, match="too small"):
        render_view(doc, program="x", budget=MIN_BUDGET - 1)


def test_crlf_and_undecodable_bytes() -> None:
    raw = new_state_file("p").replace("\n", "\r\n").encode() + b"\r\n## Notes\r\n\r\n- caf\xe9\r\n"
    view = render_view(parse(raw.decode("utf-8", "surrogateescape")), program="p")
    assert "\r" not in view.text
    assert "- caf\ufffd" in view.text


def check_misplaced_history_shown_once(text: str, newest: int) -> None:
    doc = parse(text)
    assert doc.history_misplaced
    view = render_view(doc, program="p", budget=50_000)
    assert view.text.count(f"### Iteration {newest} —") == 1
    assert view.text.index("## 🔭 Future Directions") < view.text.index("## 📊 Iteration History")


def test_misplaced_history_is_not_shown_twice() -> None:
    check_misplaced_history_shown_once(fixture_text("missing-history-heading.md"), 31)


def test_misplaced_history_is_not_shown_twice_real() -> None:
    check_misplaced_history_shown_once(read_raw(real_file("24ec373")), 29)


def test_one_line_shapes() -> None:
    doc = parse(
        "## 📊 Iteration History\n\n### Iteration 86 — 2026-04-15 03:06 UTC — ✅ metric=277 (+8) | Commit: 809e0e9\n\n"
        "### Iters 50–100 — ✅ (metrics 20→55): what worked\n\n### Notes on method\n\ntext\n"
    )
    lines = [entry_line(e) for e in doc.history]
    assert lines[0] == "- #86 ✅ accepted · 2026-04-15: ✅ metric=277 (+8) | Commit: 809e0e9"
    assert lines[1] == "- #50–100 ✅ (metrics 20→55): what worked"
    assert lines[2] == "- Notes on method"


def test_program_info_comes_before_lessons() -> None:
    """The goal and the metric's definition say what the state table's numbers mean: kept ahead of 20 lessons."""
    doc = make_doc(iterations=12, lessons=20, foreclosed=4)
    for budget in (1200, 2500, 8000):
        text = render_view(doc, program="perf", budget=budget).text
        assert "**Goal**: Make it fast" in text and "**Metric**: ops/s (higher is better)" in text, budget
    small = render_view(doc, program="perf", budget=1200)
    assert "lesson 20" not in small.text and any("lessons" in o for o in small.omitted)
    # Shown where the file has it: after the Machine State table.
    assert small.text.index("## ⚙️ Machine State") < small.text.index("## 📋 Program Info")


def test_agent_reported_bullets_never_stand_where_maintainer_text_does() -> None:
    """Lessons and avenues an agent reported through gh-aw (marked ``*(agent, iteration N)*``) rank after every
    maintainer bullet, the shared lessons included: they are the first to go when the budget is short, so even 270
    of them cannot push a maintainer's lesson out of the next agent's view."""
    from statefile.model.patterns import agent_bullet

    doc = parse(new_state_file("perf"))
    doc = doc.with_items("lessons", ["Maintainer: never touch the cache", "Maintainer: measure twice"])
    doc = doc.with_items("lessons", [agent_bullet(f"agent lesson {n} " + "x" * 40, "agent", 7) for n in range(270)])
    shared = parse(new_state_file("_shared")).with_items("lessons", ["Shared: run the linter"])
    full = render_view(doc, program="perf", budget=100_000, shared=shared).text
    assert full.index("Maintainer: measure twice") < full.index("*(agent, iteration 7)*")
    view = render_view(doc, program="perf", budget=1500, shared=shared).text
    assert "Maintainer: never touch the cache" in view and "Maintainer: measure twice" in view
    assert "Shared: run the linter" in view
    assert "agent lesson 0 " not in view  # the newest agent bullets go in only after every maintainer one


# -- the core view (gh-aw's memory.md) and hints in the reader's terms ------------------------------------------------


def test_core_keeps_state_pinned_lessons_newest_entries_and_one_line_per_avenue() -> None:
    doc = make_doc(iterations=30, lessons=10, foreclosed=4, pinned=2)
    doc = doc.with_lesson("**IMPORTANT** never touch the harness " + "i" * 100)
    view = render_view(doc, program="perf", budget=CORE_BUDGET, level="core", hints=TOOLS)
    text = view.text
    assert "| Iteration Count | 30 |" in text and "## 🎯 Current Priorities" in text
    assert "📌 lesson 1 " in text and "📌 lesson 2 " in text and "never touch the harness " + "i" * 100 in text
    assert "lesson 3 " not in text, "an unpinned lesson is one search away, not in the core"
    # The newest entries whole, nothing older in full.
    assert all(f"notes for {n} " in text for n in range(30, 30 - NEWEST_IN_CORE, -1))
    assert f"change number {30 - NEWEST_IN_CORE} " not in text
    older = next(line for line in text.splitlines() if line.startswith("- older: "))
    assert f"{30 - NEWEST_IN_CORE} iterations (#1–{30 - NEWEST_IN_CORE})" in older and "detailed" in older
    avenues = [line for line in text.splitlines() if line.startswith("- avenue ")]
    assert len(avenues) == 4 and all(len(line) <= 140 for line in avenues)
    assert len(text) < render_view(doc, program="perf", budget=50_000).chars / 2


def test_core_notice_names_tool_calls_never_commands() -> None:
    """Issue 22, item 4: memory.md is read in a checkout of main, where `statefile expand` fails (exit 3)."""
    doc = make_doc(iterations=30, lessons=10, foreclosed=4)
    for level in LEVELS:
        for budget in (MIN_BUDGET, 600, 1500, CORE_BUDGET, 8000):
            text = render_view(doc, program="perf", budget=budget, level=level, hints=TOOLS).text
            assert "statefile " not in text.replace("[statefile]", ""), (level, budget, notice_of(text))
    notice = notice_of(render_view(doc, program="perf", budget=CORE_BUDGET, level="core", hints=TOOLS).text)
    assert 'statefile_search(query: "…")' in notice
    assert f"statefile_expand(iteration: {30 - NEWEST_IN_CORE})" in notice
    assert 'statefile_view(level: "timeline")' in notice
    # The CLI's own hints stay commands.
    cli = notice_of(render_view(doc, program="perf", budget=CORE_BUDGET, level="core").text)
    assert f"statefile expand perf {30 - NEWEST_IN_CORE}" in cli and "statefile_" not in cli


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_core_view_within_budget_and_hints_runnable_by_the_agent(path: Path) -> None:
    view = render_view(parse(read_raw(path)), program="p", budget=CORE_BUDGET, level="core", hints=TOOLS)
    assert view.chars <= CORE_BUDGET
    assert "statefile " not in view.text.replace("[statefile]", "")
    assert view.text.startswith("# Autoloop: p — memory\n\n## ⚙️ Machine State") or "Machine State" not in view.text


@pytest.mark.parametrize("level", ["core", "timeline", "index"])
def test_the_expand_hint_names_an_entry_that_is_there(level: str) -> None:
    """As seen (issue 22, a newcomer's walk-through): memory.md named `statefile_expand(iteration: 27)` for an
    iteration known only from an agent's range line ("Iters 1–27") with no archive behind it, and the tool said
    it was not there.  The hint names only a left-out entry whose text is in the file; a range is reached by
    search."""
    from statefile.views.render import CLI

    ranged = "### Iters 1–27 — ✅ (metrics 1→9): an agent's summary, nothing archived\n\n"
    entries = "".join(
        render_iteration(number=n, when="2026-01-01 00:00", status="rejected", change=f"try {n}") for n in (29, 28)
    )
    doc = parse(new_state_file("perf").replace("*(No iterations yet.)*\n", entries + ranged))
    for hints in (TOOLS, CLI):
        notice = render_view(doc, program="perf", budget=3000, level=level, hints=hints).text.rstrip("\n")
        notice = notice.splitlines()[-1]
        assert "iteration: 27" not in notice and "expand perf 27" not in notice, notice
