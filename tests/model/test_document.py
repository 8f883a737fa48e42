"""The document model on both corpora and on hand-made oddities: round trip, structure, machine state, edits."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, TESTS, corpus_files, corpus_params, fixture_files, fixture_text, read_raw, real_file
from upstream import meaningful, upstream_machine_state

import statefile
from statefile.model.document import parse
from statefile.model.history import Iteration, IterationRange, OpaqueEntry


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_round_trips_byte_for_byte(path: Path) -> None:
    text = read_raw(path)
    assert parse(text).render() == text


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_machine_state_agrees_with_upstream(path: Path) -> None:
    text = read_raw(path)
    upstream = meaningful(upstream_machine_state(text))
    ours = parse(text).machine_state
    assert upstream, "every corpus file has the exact heading"
    assert ours == upstream


def test_fixture_corpus_is_complete_and_documented() -> None:
    """30 fixtures, each described in tests/data/MANIFEST.md, which sits outside the folder the tests glob."""
    names = [path.name for path in fixture_files()]
    assert len(names) == 30
    assert not (FIXTURES / "MANIFEST.md").exists()
    manifest = (TESTS / "data" / "MANIFEST.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in manifest for name in names)


def test_real_corpus_is_complete_when_present() -> None:
    real_file("24ec373")  # skips, saying why, when the real corpus is not beside this checkout
    assert len(corpus_files()) == 27


def test_machine_state_found_under_drifted_heading() -> None:
    good = "# Autoloop: x\n\n## ⚙️ Machine State\n\n| Field | Value |\n|---|---|\n| Iteration Count | 4 |\n"
    for heading in ("## Machine State", "## \ufffd\ufffd Machine State", "## ⚙ machine   state"):
        doc = parse(good.replace("## ⚙️ Machine State", heading))
        assert doc.machine_state["iteration_count"] == 4
        assert any(w.code == "machine-state-heading" for w in doc.warnings)
        doc = doc.with_field("Paused", False)
        assert doc.render().startswith("# Autoloop: x\n\n## ⚙️ Machine State\n")
        assert upstream_machine_state(doc.render())["iteration_count"] == 4
    assert not any(w.code == "machine-state-heading" for w in parse(good).warnings)


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


def test_heading_inside_code_fence_is_text() -> None:
    text = "# T\n\n## 📚 Lessons Learned\n\n```\n## ⚙️ Machine State\n| Iteration Count | 3 |\n```\n"
    doc = parse(text)
    assert [s.kind for s in doc.sections] == ["title", "lessons"]
    assert doc.machine_state == {}


def test_history_entry_shapes() -> None:
    text = (
        "## 📊 Iteration History\n\n<!-- New entries are prepended below this line -->\n\n"
        "### Iteration 263 — 2026-04-20T19:51 UTC — [Run](https://example.invalid/runs/1)\n\n"
        "- **Status**: ✅ Accepted | **Metric**: 606 (previous best: 605, delta: +1) | **Commit**: b8edf68\n"
        "- Added pairs.\n\n"
        "### Iteration 261 (partial) — 2026-04-20T18:22 UTC — [Run](https://example.invalid/runs/2)\n\n"
        "- **Status**: ⚠️ Error\n\n"
        "### Iteration 200 -- 2026-04-01 10:00 UTC -- [Run](https://example.invalid/runs/3)\n"
        "### Iterations 12 & 13 — 2026-03-01\n\n- **Status**: ❌ Rejected\n\n"
        "### Iters 84-93 -- 2026-05-16 -- ✅ (metrics 551->578%): steady\n"
        "### Iters 1–426: (0→191) Full pandas port\n"
        "### Iterations 53–165 — Various features (condensed)\n"
        "### c029 · island 3 · fitness pending CI · gen 29\n"
    )
    entries = parse(text).history
    assert [e.kind for e in entries] == [
        "iteration", "iteration", "iteration", "iteration", "range", "range", "range", "opaque",
    ]  # fmt: skip
    first = entries[0]
    assert isinstance(first, Iteration)
    assert (first.number, first.status, first.metric, first.previous_best, first.delta, first.commit) == (
        263, "accepted", "606", "605", "+1", "b8edf68",
    )  # fmt: skip
    assert first.run_url == "https://example.invalid/runs/1"
    assert first.when == "2026-04-20T19:51 UTC"
    partial = entries[1]
    assert isinstance(partial, Iteration) and partial.partial and partial.status == "error"
    heading_only = entries[2]
    assert isinstance(heading_only, Iteration) and heading_only.number == 200
    pair = entries[3]
    assert isinstance(pair, Iteration) and pair.covers == (12, 13)
    r1, r2, r3 = entries[4], entries[5], entries[6]
    assert isinstance(r1, IterationRange) and (r1.first, r1.last, r1.metric_from, r1.metric_to) == (
        84,
        93,
        "551",
        "578",
    )
    assert isinstance(r2, IterationRange) and (r2.first, r2.last, r2.metric_from, r2.metric_to) == (
        1,
        426,
        "0",
        "191",
    )
    assert isinstance(r3, IterationRange) and r3.metric_from is None and r3.summary.startswith("Various")
    assert isinstance(entries[7], OpaqueEntry)
    assert "".join(e.raw for e in entries) == text[text.index("### Iteration 263") :]


def test_bullet_entries_without_headings() -> None:
    text = "## 📊 Iteration History\n\n- Iter 2: ✅ fine\n- Iter 1: ❌ CI failed · commit 24bbe85\n"
    entries = parse(text).history
    assert [(e.kind, e.covers) for e in entries] == [("iteration", (2,)), ("iteration", (1,))]
    assert [e.status for e in entries if isinstance(e, Iteration)] == ["accepted", "rejected"]


def check_entries_under_another_section(text: str, population_tag: str, newest: int) -> None:
    doc = parse(text)
    assert doc.history_misplaced
    assert [e.kind for e in doc.history] == ["iteration", "iteration", "range"]
    # The Population section's "### c0… · island …" headings are not history.
    assert all(population_tag not in e.heading for e in doc.history)
    future = doc.section("future")
    assert future is not None and f"### Iteration {newest} " in future.text


def test_entries_under_another_section_when_history_heading_is_missing() -> None:
    check_entries_under_another_section(fixture_text("missing-history-heading.md"), "island", 31)


def test_entries_under_another_section_when_history_heading_is_missing_real() -> None:
    check_entries_under_another_section(read_raw(real_file("24ec373")), "c029", 29)


def check_warnings(texts: dict[str, str], duplicated: str, partial: str, after_rule: str) -> None:
    codes = {name: {w.code for w in parse(text).warnings} for name, text in texts.items()}
    assert "duplicate-section" in codes[duplicated]
    assert "duplicate-iteration" in codes[partial]
    assert "missing-history-heading" in codes[after_rule]
    assert any("range-overlaps-entry" in c for c in codes.values())
    assert any("history-gap" in c for c in codes.values())


def test_warnings_on_corpus_oddities() -> None:
    texts = {path.name: read_raw(path) for path in fixture_files()}
    check_warnings(
        texts, "duplicated-sections.md", "partial-duplicate-entry.md", "missing-history-heading-after-rule.md"
    )


def test_warnings_on_corpus_oddities_real() -> None:
    names = [real_file(tag).name for tag in ("e45365e", "36c0d7f", "d1b9067")]
    check_warnings({path.name: read_raw(path) for path in corpus_files()}, *names)


def test_warnings_for_missing_machine_state_and_count_mismatch() -> None:
    doc = parse("# Autoloop: x\n\n## 📊 Iteration History\n\n### Iteration 3 — 2026-01-01\n")
    assert {w.code for w in doc.warnings} >= {"missing-machine-state", "history-gap"}
    doc = parse(statefile.new_state_file("x"))
    doc = doc.with_field("Iteration Count", 5)
    doc = doc.with_entry("### Iteration 1 — 2026-01-01 00:00 UTC\n\n- **Status**: ✅ Accepted\n\n")
    assert "iteration-count-mismatch" in {w.code for w in doc.warnings}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "no structure at all",
        "\ufeff# T\r\n\r\n## Machine State\r\n",
        "a\rb\r\nc\n",
        "\x00\x00",
        "\ud800x",
    ],
)
def test_parse_is_total_and_lossless_on_odd_text(text: str) -> None:
    doc = parse(text)
    assert doc.render() == text
    doc.warnings  # noqa: B018 - computing the views must not raise either
    doc.history  # noqa: B018


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


def test_an_unclosed_fence_is_an_anomaly() -> None:
    text = statefile.new_state_file("x").replace("## 📚 Lessons Learned", "```\n## 📚 Lessons Learned")
    codes = {w.code for w in parse(text).warnings}
    assert "unclosed-block" in codes
    assert "unclosed-block" not in {w.code for w in parse(statefile.new_state_file("x")).warnings}


@pytest.mark.parametrize("rule", ["---", "***", "___", "* * *", " - - -"])
def test_an_added_bullet_or_table_goes_above_the_section_separator_whatever_its_shape(rule: str) -> None:
    """Every thematic break is a section separator (planning.split_tail reads them so too), not just ``---``."""
    text = (
        "# Autoloop: x\n\n## ⚙️ Machine State\n\nNo table yet.\n\n"
        f"{rule}\n\n## 📚 Lessons Learned\n\nWhat we learned.\n\n{rule}\n\n## 🔭 Future Directions\n\n- more\n"
    )
    doc = parse(text).with_lesson("cache the parser").with_field("Iteration Count", 3)
    assert doc.list_items("lessons")[0].text == "- cache the parser\n"
    assert doc.machine_state["iteration_count"] == 3
    lessons = doc.section("lessons")
    state = doc.section("machine_state")
    assert lessons is not None and state is not None
    assert lessons.text.endswith(f"What we learned.\n\n- cache the parser\n\n{rule}\n\n")
    assert state.text.endswith(f"| Iteration Count | 3 |\n\n{rule}\n\n")


def test_a_rule_inside_a_fence_is_content_not_a_separator() -> None:
    from statefile.model.blocks import content_end

    lines = ["## Notes\n", "\n", "```\n", "---\n", "```\n", "\n", "***\n", "\n"]
    assert content_end(lines) == 5
    assert content_end(["## Notes\n", "---\n"]) == 1
    assert content_end([]) == 0


def gap_file(ack: str = "") -> str:
    """Iterations 1–5 and 41–45 in full, nothing for 6–40 (as real files have: an agent lost those entries)."""
    from statefile.model.history import render_iteration

    entries = "".join(
        render_iteration(number=n, when="2026-01-01 00:00", status="accepted", metric=str(n))
        for n in [*range(45, 40, -1), *range(5, 0, -1)]
    )
    text = statefile.new_state_file("perf", iteration_count=45).replace("*(No iterations yet.)*\n", entries)
    if ack:
        text = text.replace("## 📊 Iteration History\n", f"## 📊 Iteration History\n\n{ack}\n", 1)
    return text


def test_a_known_history_gap_can_be_acknowledged(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As seen (issue 22): real files' history-gap warnings could not be accepted, so `check` warned forever."""
    import json

    from statefile.cli import cli
    from statefile.cli.run import invoke

    assert [w.message for w in parse(gap_file()).warnings if w.code == "history-gap"] == [
        "no entry or range covers iterations 6–40 (a known gap: add '<!-- statefile: gap 6–40 acknowledged -->' "
        "under the history heading)"
    ]
    acknowledged = gap_file("<!-- statefile: gap 6–40 acknowledged -->")
    assert "history-gap" not in {w.code for w in parse(acknowledged).warnings}
    # Only the numbers it names: a gap beyond them still warns.
    partly = gap_file("<!-- statefile: gap 6-30 acknowledged (lost in the 2026-04 push failures) -->")
    assert [w.message.split(" (")[0] for w in parse(partly).warnings if w.code == "history-gap"] == [
        "no entry or range covers iterations 31–40"
    ]

    monkeypatch.chdir(tmp_path)
    for name in ("STATEFILE_DIR", "STATEFILE_REPO_MEMORY", "STATEFILE_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "perf.md").write_text(acknowledged)
    assert invoke(cli, ["--dir", str(tmp_path), "check"]) == 0
    out, _ = capfd.readouterr()
    assert "warning" not in out and "acknowledged: history-gap: iterations 6–40" in out, out
    assert invoke(cli, ["--dir", str(tmp_path), "--json", "check"]) == 0
    [report] = json.loads(capfd.readouterr()[0])
    assert report["warnings"] == [] and report["acknowledged"] == [
        "history-gap: iterations 6–40 (acknowledged in the file)"
    ]
    # Records and compaction keep the acknowledgement where it is (it is not an entry: nothing folds it away).
    assert invoke(cli, ["--dir", str(tmp_path), "--max-bytes", "6000", "record", "perf", "--status", "accepted",
                        "--metric", "46"]) == 0  # fmt: skip
    capfd.readouterr()
    text = (tmp_path / "perf.md").read_text()
    assert "<!-- statefile: gap 6–40 acknowledged -->" in text and "### Iters" in text, text
    assert "history-gap" not in {w.code for w in parse(text).warnings}
