"""The format's words (statefile.model.patterns): section names, placeholders, metric direction."""

from __future__ import annotations

import pytest
from conftest import SECTION_PREFIXES, SECTION_SUFFIXES, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from statefile.model.document import parse
from statefile.model.patterns import is_placeholder, section_name, state_direction
from statefile.model.template import SECTION_KINDS, new_state_file, section_kind
from statefile.policy.lessons import add_lesson, lessons
from statefile.views.history import pressure
from statefile.views.render import render_view

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


def test_none_is_a_placeholder_everywhere() -> None:
    """As seen in issue 11: none is a placeholder everywhere."""
    doc = parse(new_state_file("perf").replace("- *(none yet)*", "- *(none)*", 1))
    section = doc.section("lessons")
    assert section is not None and "- *(none)*" in section.text
    assert lessons(doc) == []
    assert all(item.is_placeholder and is_placeholder(item.text) for item in doc.list_items("lessons"))
    assert pressure(doc, max_bytes=30720)["counts"]["lessons"] == 0
    assert "(none)" not in render_view(doc, program="perf").text
    added = add_lesson(doc, "Warm the cache first")
    assert "- *(none)*" not in added.render() and [i.text.strip() for i in lessons(added)] == ["- Warm the cache first"]


@pytest.mark.parametrize(
    "words", ["lower", "minimize", "minimise", "decrease", "lower is better", "less is better", "Minimize ms"]
)
def test_every_way_of_saying_lower_is_lower(words: str) -> None:
    """As seen in issue 11: every way of saying lower is lower."""
    assert state_direction({"metric_direction": words}) == "lower"


@pytest.mark.parametrize("words", ["higher", "maximize", "higher is better", "", "—", "increase"])
def test_everything_else_is_higher(words: str) -> None:
    """As seen in issue 11: everything else is higher."""
    assert state_direction({"metric_direction": words}) == "higher"
