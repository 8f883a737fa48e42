"""The Machine State table (statefile.model.machine_state): read as the upstream scheduler reads it, one row edited
without touching the others (through the document, as every caller edits it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import changed_lines, corpus_params, read_raw
from upstream import meaningful, upstream_machine_state

from statefile.model.document import parse


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_machine_state_agrees_with_upstream(path: Path) -> None:
    text = read_raw(path)
    upstream = meaningful(upstream_machine_state(text))
    ours = parse(text).machine_state
    assert upstream, "every corpus file has the exact heading"
    assert ours == upstream


def test_machine_state_conventions() -> None:
    text = (
        "## ⚙️ Machine State\n\n| Field | Value |\n|-------|-------|\n"
        "| Iteration Count | seven |\n| Paused | True |\n| Completed | no |\n| PR | — |\n| Issue | - |\n"
        "| Pause Reason |  |\n| Recent Statuses | Accepted,rejected , ERROR |\n| Branch | `autoloop/x` |\n"
        "| Iteration Count | 9 |\n"
    )
    state = parse(text).machine_state
    assert state["iteration_count"] == 9  # a later duplicate row wins
    assert state["paused"] is True and state["completed"] is False
    assert state["pr"] is None and state["issue"] is None and state["pause_reason"] is None
    assert state["recent_statuses"] == ["accepted", "rejected", "error"]
    assert state["branch"] == "`autoloop/x`"


@pytest.mark.parametrize("path", corpus_params())
def test_set_field_changes_one_row(path: Path) -> None:
    text = read_raw(path)
    doc = parse(text)
    doc = doc.with_field("Iteration Count", 999)
    diff = changed_lines(text, doc.render())
    assert len(diff) == 2, diff
    assert "| 999" in diff[1] or "|999" in diff[1]
    assert doc.machine_state["iteration_count"] == 999
    assert meaningful(upstream_machine_state(doc.render()))["iteration_count"] == 999


def test_missing_row_is_added_in_canonical_order_with_table_style() -> None:
    text = "## ⚙️ Machine State\n\n|Field|Value|\n|---|---|\n|Last Run|—|\n|Branch|x|\n|Custom|keep|\n\n## Next\n"
    doc = parse(text)
    doc = doc.with_fields({"metric_direction": "lower", "Paused": True})
    out = doc.render()
    assert out == (
        "## ⚙️ Machine State\n\n|Field|Value|\n|---|---|\n|Last Run|—|\n|Metric Direction|lower|\n|Branch|x|\n"
        "|Paused|true|\n|Custom|keep|\n\n## Next\n"
    )


def test_set_field_keeps_crlf_and_missing_final_newline() -> None:
    text = "## ⚙️ Machine State\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Iteration Count | 1 |"
    doc = parse(text)
    doc = doc.with_field("iteration_count", 2)
    doc = doc.with_field("Paused", False)
    assert doc.render() == (
        "## ⚙️ Machine State\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Iteration Count | 2 |\r\n| Paused | false |"
    )
