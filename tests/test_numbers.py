"""statefile.numbers: the one style of numbers in human output (issue 22), at its edges."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from gitutil import Repos, invoke_statefile, make_repos

from statefile.cli import cli
from statefile.cli.run import invoke
from statefile.cli.write import SAMPLE_PROGRAMS, sample_text
from statefile.numbers import budget_text, number_text, percent, percent_text, plural, size_text
from statefile.store import Store


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (30_720, "30,720"),
        (10**9, "1,000,000,000"),
        (-1234, "-1,234"),
        pytest.param(10**30 - 1, f"{10**30 - 1:,}", id="30-digits"),
        pytest.param(10**30, "a number of more than 30 digits", id="31-digits"),
        # past Python's int-to-text limit (4,300 digits): no ValueError
        pytest.param(10**5000, "a number of more than 30 digits", id="5001-digits"),
    ],
)
def test_number_text_separates_thousands(number: int, text: str) -> None:
    assert number_text(number) == text


def test_sizes_and_counts_agree_with_their_nouns() -> None:
    assert size_text(0) == "0 bytes"
    assert size_text(1) == "1 byte"
    assert size_text(999) == "999 bytes"
    assert size_text(1000) == "1,000 bytes"
    assert size_text(10**9) == "1,000,000,000 bytes"
    assert plural(1, "entry", "entries") == "1 entry"
    assert plural(1000, "entry", "entries") == "1,000 entries"


@pytest.mark.parametrize(
    ("part", "whole", "value", "text"),
    [
        (0, 30_720, 0.0, "0.0%"),
        (1, 10**9, 0.1, "0.1%"),  # a non-empty file never reads 0.0%
        (999, 1000, 99.9, "99.9%"),
        (9995, 10_000, 99.9, "99.9%"),  # 99.95 %: under the budget never reads 100.0%
        (1000, 1000, 100.0, "100.0%"),
        (10_001, 10_000, 100.1, "100.1%"),  # 100.01 %: over the budget never reads 100.0%
        (2585, 1000, 258.5, "258.5%"),  # never 258% (nor 258.4% from a float error)
        (79_399, 30_720, 258.5, "258.5%"),
        (1582, 30_720, 5.1, "5.1%"),
        (3269, 30_720, 10.6, "10.6%"),
        (125, 1000, 12.5, "12.5%"),  # halves round up
        (10**9, 1000, 100_000_000.0, "100,000,000.0%"),
    ],
)
def test_percent_has_one_decimal_and_never_crosses_a_line(part: int, whole: int, value: float, text: str) -> None:
    assert percent(part, whole) == value
    assert percent_text(value) == text


def test_percent_without_a_budget_is_none() -> None:
    assert percent(5, 0) is None
    assert budget_text(3840, 0) == "3,840 bytes"


@pytest.mark.parametrize(
    ("size", "budget", "text"),
    [
        (0, 30_720, "0 of 30,720 bytes (0.0%)"),
        (3840, 30_720, "3,840 of 30,720 bytes (12.5%)"),
        (999, 1000, "999 of 1,000 bytes (99.9%)"),
        (1000, 1000, "1,000 of 1,000 bytes (100.0%)"),
        (79_399, 30_720, "79,399 of 30,720 bytes (258.5%)"),
        (10**9, 10**9, "1,000,000,000 of 1,000,000,000 bytes (100.0%)"),
    ],
)
def test_budget_text(size: int, budget: int, text: str) -> None:
    assert budget_text(size, budget) == text


# -- Every number in the commands' human output follows the one style of statefile.numbers (issue 22)


GROUPED = r"\d{1,3}(?:,\d{3})*"
#: What is a number but not a size or a count: dates and times, commit ids (statefile shows 10 characters, or all
#: 40), paths and URLs, ``file.md:LINE`` places, ``key=value`` echoes of JSON, and flag values in a command to
#: paste (typed back as they are).
_NOT_A_QUANTITY = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?"
    r"|\b[0-9a-f]{40}\b|\b[0-9a-f]{10}\b"
    r"|\S*/\S*|\S+\.md:\d+"
    r"|\w+=\S+"
    r"|--[\w-]+[ =]\d+"
)
_PERCENT = re.compile(r"(?<![\w.,])[\d.,]*\d\s?%")
_SIZED = re.compile(r"(?<![\w.,])(\d[\d,]*)(?: of (\d[\d,]*))? ?(?:bytes?|B|tokens?|tok)\b")
_LONG_RUN = re.compile(r"(?<![\d,.])\d{4,}(?![\d,])")


def style_problems(text: str) -> list[str]:
    """What in ``text`` breaks the style: a percentage not ``12.5%``, a size without separators, a bare run of
    four or more digits where a size or a count stands."""
    problems = [f"percentage {m.group()!r}" for m in _PERCENT.finditer(text)
                if not re.fullmatch(rf"{GROUPED}\.\d%", m.group())]  # fmt: skip
    for match in _SIZED.finditer(text):
        problems += [f"size {match.group()!r}" for n in match.groups() if n and not re.fullmatch(GROUPED, n)]
    problems += [f"ungrouped {m.group()!r}" for m in _LONG_RUN.finditer(_NOT_A_QUANTITY.sub(" ", text))]
    return problems


def test_style_problems_finds_each_old_form() -> None:
    """The checker itself: each inconsistent form issue 22 names is caught, the chosen style passes."""
    assert style_problems("fresh: ok, 1582 bytes (5% of 30720)") == [
        "percentage '5%'", "size '1582 bytes'", "ungrouped '1582'", "ungrouped '30720'"]  # fmt: skip
    assert style_problems("long-running  79399  258%") == ["percentage '258%'", "ungrouped '79399'"]
    assert style_problems("next record (~321 B) passes 80% of the budget") == ["percentage '80%'"]
    assert style_problems("compacted: 79399 → 9620 of 30720 bytes") != []
    ok = "fresh: ok, 1,582 of 30,720 bytes (5.1%); 258.5%; commit 2fb284e769 on 2026-01-29T15:35:00Z; --budget 5046"
    assert style_problems(ok) == []


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    """A clone and its bare remote whose memory branch holds the samples, as agents leave them."""
    repos = make_repos(tmp_path)
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files({f"{name}.md": sample_text(name) for name in SAMPLE_PROGRAMS}, "seed the samples")
    return repos


def test_every_read_and_write_command_writes_numbers_one_way(
    repos: Repos, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    autoloop = tmp_path / "autoloop.json"
    autoloop.write_text(sample_text("autoloop.json"), encoding="utf-8")
    agent_output = tmp_path / "agent_output.json"
    agent_output.write_text(json.dumps({"items": [
        {"type": "record_iteration", "program": "mid-life", "status": "accepted", "metric": "140", "change": "Fuse"}
    ]}))  # fmt: skip
    commands = [
        ["list"],
        ["list", "--sort", "size"],
        ["status"],
        ["check"],
        ["summary"],
        ["history", "long-running"],
        ["show", "mid-life"],
        ["compact", "--all", "--dry-run"],
        ["repair", "messy", "--dry-run"],
        ["report", "--out", str(autoloop)],
        ["prepare", "--autoloop-json", str(autoloop), "--out", str(tmp_path / "agent"),
         "--context-out", str(tmp_path / "context")],
        ["compact", "long-running"],
        ["record", "mid-life", "--status", "accepted", "--change", "Vectorize", "--metric", "131.5"],
        ["record", "messy", "--status", "error", "--change", "Parallel parse"],
        ["repair", "messy"],
        ["apply", "--agent-output", str(agent_output), "--any-program"],
        ["compact", "--all"],
        ["list"],
        ["status", "long-running"],
        ["check"],
        ["summary"],
        ["render", "mid-life", "--level", "index"],
    ]  # fmt: skip
    seen: dict[str, str] = {}
    for args in commands:
        ran = invoke_statefile(capsys, "--remote", "origin", *args, cwd=repos.work)
        assert ran.code in (0, 1), f"statefile {' '.join(args)} failed ({ran.code}): {ran.err}"
        seen.setdefault(" ".join(args), ran.out + ran.err)  # the first run of a command, before any write
        problems = style_problems(ran.out + ran.err)
        assert problems == [], f"statefile {' '.join(args)}: {problems}\n{ran.out}{ran.err}"
    # The style is really there, in each form (not a vacuous pass on empty output).
    assert re.search(r"long-running +79,399 +258\.5% +240 ", seen["list --sort size"])
    assert "long-running: FAIL, 79,399 of 30,720 bytes (258.5%)" in seen["check"]
    assert "long-running: compacted: 79,399 → " in seen["compact long-running"]
    assert re.search(rf"recorded iteration 41 of mid-life \(✅ accepted\), {GROUPED} of 30,720 bytes \(\d+\.\d%\)",
                     seen["record mid-life --status accepted --change Vectorize --metric 131.5"])  # fmt: skip
    assert "79,399 of 30,720 bytes (258.5%) ⚠️ over budget" in seen["summary"]
    assert re.search(r"item 1 \(mid-life\): recorded iteration 42 \(accepted\), [\d,]+ of 30,720 bytes \(\d+\.\d%\)",
                     seen[f"apply --agent-output {agent_output} --any-program"])  # fmt: skip


def test_the_commit_messages_statefile_writes_use_the_style(repos: Repos, capsys: pytest.CaptureFixture[str]) -> None:
    """CompactionReport.summary() is the body of the commits compact and record write: sizes grouped there too."""
    assert invoke_statefile(capsys, "--remote", "origin", "compact", "long-running", cwd=repos.work).code == 0
    args = ["record", "mid-life", "--status", "accepted", "--change", "Vectorize", "--metric", "131.5"]
    assert invoke_statefile(capsys, "--remote", "origin", *args, cwd=repos.work).code == 0
    log = subprocess.run(["git", "log", "--format=%B", "memory/autoloop"], cwd=repos.remote, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert "compacted: 79,399 → " in log and "of 30,720 bytes (" in log, log
    assert style_problems(log) == [], log


def test_the_demo_writes_numbers_one_way(capsys: pytest.CaptureFixture[str]) -> None:
    """statefile demo, the first thing a newcomer runs: statefile's own lines (render and expand print the file's
    text as it is, whatever numbers the agent wrote there)."""
    capsys.readouterr()
    assert invoke(cli, ["demo"]) == 0
    out = capsys.readouterr().out
    ours = [block for block in out.split("\n$ ") if not block.startswith(("statefile render", "statefile expand"))]
    assert len(ours) > 8 and "258.5%" in out
    assert style_problems("\n".join(ours)) == []
