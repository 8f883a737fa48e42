"""The upstream template (statefile.model.template): which section a heading is, and the fresh file it writes."""

from __future__ import annotations

import pytest
from conftest import SECTION_PREFIXES, SECTION_SUFFIXES, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from upstream import meaningful, upstream_machine_state

import statefile
from statefile.model.document import parse
from statefile.model.patterns import section_name
from statefile.model.template import SECTION_KINDS, section_kind

NAMES = [(name, kind) for kind, (_, names) in SECTION_KINDS.items() for name in names]


@settings(max_examples=examples(200))
@given(
    prefix=st.sampled_from(SECTION_PREFIXES),
    named=st.sampled_from(NAMES),
    suffix=st.sampled_from(SECTION_SUFFIXES),
    case=st.sampled_from([str.title, str.lower, str.upper]),
)
def test_known_sections_are_recognised_however_decorated(
    prefix: str, named: tuple[str, str], suffix: str, case: object
) -> None:
    """As seen in issue 11: known sections are recognised however decorated."""
    name, kind = named
    assert callable(case)
    title = f"{prefix}{case(name)}{suffix}"
    assert section_kind(title, 2) == kind, (title, section_name(title))


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("📚 Key Lessons", "lessons"),
        ("📜 Iterations", "history"),
        ("📊 Recent Iterations", "history"),
        ("🧬 Population (summary)", "other"),
        ("Notes", "other"),
        ("Foreclosed / Ruled-out Avenues", "foreclosed"),
    ],
)
def test_decorated_names_from_the_fixture_report(title: str, kind: str) -> None:
    """As seen in issue 11: decorated names from the fixture report."""
    assert section_kind(title, 2) == kind


def test_new_state_file_reads_back_through_upstream() -> None:
    text = statefile.new_state_file("perf", metric_direction="lower", target_metric=0.5, issue="#3")
    state = meaningful(upstream_machine_state(text))
    assert state["iteration_count"] == 0
    assert state["metric_direction"] == "lower"
    assert state["target_metric"] == "0.5"
    assert state["issue"] == "#3"
    assert state["branch"] == "`autoloop/perf`"
    assert state["recent_statuses"] == []
    assert parse(text).machine_state == state
    assert [s.kind for s in parse(text).sections] == [
        "title", "machine_state", "program_info", "priorities", "lessons", "foreclosed", "future", "history",
    ]  # fmt: skip
    assert parse(text).warnings == ()
