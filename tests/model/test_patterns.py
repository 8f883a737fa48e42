"""The format's words (statefile.model.patterns): placeholders, metric direction (section names: through
``section_kind``, in tests/model/test_template.py)."""

from __future__ import annotations

import pytest

from statefile.model.document import parse
from statefile.model.patterns import is_placeholder, state_direction
from statefile.model.template import new_state_file
from statefile.policy.lessons import add_lesson, lessons
from statefile.views.history import pressure
from statefile.views.render import render_view


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
