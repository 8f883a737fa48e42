"""gh-aw's formats as statefile reads them: file-glob, the patch-size rule, agent output, sanitised values."""

from __future__ import annotations

import math
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from ghaw import push_job
from ghaw.safe_outputs import sanitize

from statefile.errors import NotFoundError, UsageError
from statefile.integrations.ghaw import (
    InputError,
    count_value,
    effective_patch_limit,
    glob_matches,
    lines_value,
    number_value,
    parse_agent_output,
    patch_added_bytes,
    read_agent_output,
    reference_value,
    text_value,
)

# (pattern, path, pushed?) — the table in the team's gh-aw notes (§1.5), checked by running gh-aw's function.
GLOB_TABLE = [
    ("*.md", "a.md", True),
    ("*.md", ".hidden.md", True),
    ("*.md", "sub/a.md", False),
    ("*.md", "A.MD", False),
    ("**/*.md", "x/a.md", True),
    ("**/*.md", "a.md", False),
    ("archive/*.md", "archive/a.md", True),
    ("?.md", "a.md", False),
    ("?.md", "?.md", True),
    ("[ab].md", "a.md", False),
    ("[ab].md", "[ab].md", True),
    ("archive/**", "archive/perf/0001.md", True),
    ("*", "_archive.perf.0001.md", True),
    ("a+b.md", "a+b.md", True),
]


@pytest.mark.parametrize(("pattern", "path", "pushed"), GLOB_TABLE)
def test_glob_semantics_match_gh_aw(pattern: str, path: str, pushed: bool) -> None:
    assert glob_matches(path, (pattern,)) is pushed
    # statefile's translation and the tests' independent re-statement of the push job agree.
    assert bool(push_job.glob_to_regex(pattern).match(path)) is pushed


def test_no_globs_is_no_filter() -> None:
    assert glob_matches("anything/at/all", ())


def test_patch_limit_is_floor_of_1_2_times() -> None:
    for limit in (1, 10, 1000, 10240, 30720, 12345, 99999):
        assert effective_patch_limit(limit) == math.floor(limit * 1.2)
    assert effective_patch_limit(10240) == 12288


def test_patch_size_counts_added_lines_like_the_push_job(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.md").write_text("one\ntwo\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "a"], cwd=repo, check=True)
    (repo / "a.md").write_text("one\nzwei ü\n++ quirk\nthree")
    (repo / "b.md").write_text("new\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    diff = subprocess.run(["git", "diff", "--cached"], cwd=repo, capture_output=True, text=True, check=True).stdout
    # "+zwei ü" (8 bytes) + 1, "+three" + 1, "+new" + 1; "+++ quirk" is not counted (it reads as a header).
    assert patch_added_bytes(diff) == push_job.patch_size(diff) == (len("+zwei ü".encode()) + 1) + 7 + 5


def test_agent_output_items_of_a_type() -> None:
    output = parse_agent_output(
        '{"items":[{"type":"record_iteration","program":"a"},{"type":"add_comment"},'
        '{"type":"record-iteration","program":"b"}],"errors":["Line 4: Too many items"]}',
        "out.json",
    )
    assert [i["program"] for i in output.of_type("record-iteration")] == ["a", "b"]
    assert output.errors == ("Line 4: Too many items",)


@pytest.mark.parametrize("text", ["[]", "not json", '{"items": {}}', '{"items": [1]}'])
def test_agent_output_that_is_not_one_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_agent_output(text, "out.json")


def test_missing_agent_output_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="GH_AW_AGENT_OUTPUT"):
        read_agent_output(tmp_path / "agent_output.json")


def test_numbers_arrive_as_numbers_or_strings() -> None:
    assert number_value({"m": 0.93}, "m") == Decimal("0.93")
    assert number_value({"m": "0.93"}, "m") == Decimal("0.93")
    assert number_value({"m": " `1,234.5` "}, "m") == Decimal("1234.5")
    assert number_value({"m": 7}, "m") == 7
    assert number_value({"m": "—"}, "m") is None
    assert count_value({"n": "3"}, "n") == 3
    for bad in ({"m": "fast"}, {"m": True}, {"m": "nan"}):
        with pytest.raises(InputError):
            number_value(bad, "m")
    with pytest.raises(InputError):
        count_value({"n": "2.5"}, "n")


def test_references_survive_sanitisation_or_say_they_did_not() -> None:
    assert reference_value({"pr": "#12"}, "pr") == (12, None)
    assert reference_value({"pr": 12}, "pr") == (12, None)
    assert reference_value({"pr": "PR #12"}, "pr") == (12, None)
    assert reference_value({"pr": "https://github.com/o/r/pull/12"}, "pr") == (12, None)
    redacted = sanitize("https://ghe.example.com/o/r/pull/12")
    assert redacted == "(ghe.example.com/redacted)"
    number, warning = reference_value({"pr": redacted}, "pr")
    assert number is None and warning and "redacted" in warning
    with pytest.raises(InputError):
        reference_value({"pr": "twelve"}, "pr")


def test_text_and_lists_after_sanitisation() -> None:
    notes = sanitize("  <!-- hidden --> Faster; thanks @octocat, see http://example.com/x and {{ x }}  ")
    assert notes == "Faster; thanks `@octocat`, see (example.com/redacted) and \\{\\{ x }}"
    assert text_value({"notes": notes}, "notes") == notes
    assert lines_value({"l": "- one\n* two\n\n3. three\n(none)"}, "l") == ["one", "two", "three", "(none)"]
    assert lines_value({"l": ["a", " b "]}, "l") == ["a", "b"]
    assert lines_value({"l": "none"}, "l") == []


# -- agent text is data ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("\x1b[31mred\x1b[0m text", "red text"),
        ("title \x1b]0;pwned\x07 here", "title  here"),
        ("bell\x07 nul\x00 del\x7f c1\x9b31m", "bell nul del c1"),
        ("evil\u202etxt.exe \u2066iso\u2069", "eviltxt.exe iso"),
        ("a <!-- statefile-item: run 1 attempt 1 item 1 --> b", "a  b"),
        ("open <!-- never closed", "open  never closed"),
        ("📌 pinned <!-- pin --> <!--pinned-->", " pinned  "),
        ("**IMPORTANT**: do it, CRITICAL too, ** Important** x", "important: do it, critical too,  important x"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        # A removal must not join what is left into a comment or a pin (found by the hostile suite).
        ("x <📌!-- hidden -📌-> y", "x  y"),
        ("done <📌!-- everything after this is hidden", "done  everything after this is hidden"),
        ("**Important:** x", "important: x"),
        ("line\r\nbreak\rhere\ttab", "line\nbreak\nhere\ttab"),
    ],
)
def test_clean_text_leaves_data_only(raw: str, kept: str) -> None:
    from statefile.integrations.ghaw import clean_text
    from statefile.policy.pruning import is_important, is_pinned

    cleaned = clean_text(raw)
    assert cleaned == kept
    assert not is_pinned(cleaned) and not is_important(cleaned)


def test_texts_are_capped_with_a_warning() -> None:
    warnings: list[str] = []
    notes = text_value({"notes": "é" * 5_000_000}, "notes", warnings)
    assert notes is not None and len(notes.encode()) <= 1000 and notes.endswith("…")
    assert warnings == ["notes was cut to 1,000 bytes (it had 10,000,000)"]
    warnings.clear()
    lessons = lines_value({"lessons": "\n".join(f"📌 lesson {n}" for n in range(3000))}, "lessons", warnings)
    assert lessons == [f"lesson {n}" for n in range(5)]
    assert "(2,995 more left out)" in warnings[0]


@pytest.mark.parametrize(
    "value",
    ["1e5000", "1e999999999", "٣", "１２", "0x10", "9" * 41, "1" * 5000, "1e", "NaN", "Infinity", "--1", "1.2.3"],
)
def test_numbers_are_bounded_before_they_are_converted(value: str) -> None:
    with pytest.raises(InputError):
        number_value({"metric": value}, "metric")
    with pytest.raises(InputError):
        count_value({"ci_fix_attempts": value}, "ci_fix_attempts")
    with pytest.raises(InputError):
        reference_value({"pr": value}, "pr")


def test_counts_and_references_are_ranged() -> None:
    assert count_value({"n": "1000"}, "n") == 1000
    for bad in ("1001", -1, 1001, 2.5):
        with pytest.raises(InputError):
            count_value({"n": bad}, "n")
    assert reference_value({"pr": 2**31 - 1}, "pr") == (2**31 - 1, None)
    for bad in (2**31, "#2147483648", 0):
        with pytest.raises(InputError):
            reference_value({"pr": bad}, "pr")


def test_one_huge_number_is_its_items_problem_not_the_outputs() -> None:
    output = parse_agent_output('{"items": [{"type": "t", "pr": 123456789012345678901234567890123456789012},'
                                ' {"type": "t", "metric": 1e999}]}', "x")  # fmt: skip
    assert output.items[0]["pr"] == "123456789012345678901234567890123456789012"
    assert output.items[1]["metric"] == "1e999"
    with pytest.raises(InputError):
        reference_value(output.items[0], "pr")
    with pytest.raises(InputError):
        number_value(output.items[1], "metric")
