"""Charts: the sparkline, and the Mermaid ``xychart-beta`` checked twice — by a validator written from Mermaid's
documented grammar (always), and by Mermaid's own parser under node (when tests/mermaid has its packages:
``npm ci --prefix tests/mermaid``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from ghaw.component import bin_dir, load_component, run_steps
from gitutil import make_repos
from mermaid_xychart import validate
from synthetic import synthetic_state

from statefile.model.document import parse
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file
from statefile.store import Store
from statefile.views.charts import mermaid_xychart, number_text, sparkline, thin
from statefile.views.history import ProgramHistory, history_rows

MERMAID_DIR = Path(__file__).resolve().parents[1] / "mermaid"


def test_sparkline_levels_flat_empty_and_width() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([8, 1]) == "█▁"
    assert sparkline([3, 3, 3]) == "▄▄▄"
    assert sparkline([]) == ""
    line = sparkline([float(n) for n in range(1000)], width=10)
    assert len(line) == 10 and line[0] == "▁" and line[-1] == "█"
    assert list(line) == sorted(line)


def test_numbers_in_mermaid_form_and_thinning() -> None:
    assert [number_text(v) for v in (1e-7, 1.5e12, -0.0, 266.91, -3.25)] == [
        "0.0000001", "1500000000000", "0", "266.91", "-3.25",
    ]  # fmt: skip
    points = [(n, float(n)) for n in range(1, 241)]
    kept = thin(points, 60)
    assert len(kept) == 60 and kept[0] == points[0] and kept[-1] == points[-1]
    assert thin(points[:5], 60) == points[:5]


def history_of(
    metrics: list[str | None], direction: str = "higher", statuses: list[str] | None = None
) -> ProgramHistory:
    entries = [
        render_iteration(
            number=n, when="2026-01-01 00:00", status=(statuses or [])[n - 1] if statuses else "accepted", metric=m
        )
        for n, m in enumerate(metrics, 1)
    ]
    text = new_state_file("perf", metric_direction=direction).replace(
        "*(No iterations yet.)*\n", "".join(reversed(entries))
    )
    return history_rows(parse(text), "perf")


def charts() -> dict[str, str]:
    """Diagrams for the shapes a run can take."""
    long_run = parse(synthetic_state("long", 400, seed=2, direction="lower"))
    out = {
        "rising": mermaid_xychart(history_of(["1", "2.5", None, "3"])),
        "lower, negative": mermaid_xychart(history_of(["-1.5", "-3", "-2"], "lower")),
        "one point": mermaid_xychart(history_of(["0.93"])),
        "flat": mermaid_xychart(history_of(["5", "5", "5"])),
        "rejected first": mermaid_xychart(history_of(["9", "7", "8"], statuses=["rejected", "rejected", "accepted"])),
        "huge and tiny": mermaid_xychart(history_of(["1e9", "0.000001"])),
        "400 iterations": mermaid_xychart(history_rows(long_run, "long")),
    }
    assert all(text is not None for text in out.values())
    return {k: v for k, v in out.items() if v is not None}


def test_charts_are_valid_xycharts() -> None:
    for name, text in charts().items():
        assert validate(text) == [], (name, text)
    long = charts()["400 iterations"]
    assert long.count("\n    line [") == 2
    categories = re.search(r"x-axis \"iteration\" \[(.*)\]", long)
    assert categories is not None and len(categories.group(1).split(", ")) == 60


def test_no_metric_no_chart() -> None:
    assert mermaid_xychart(history_of([None, None])) is None


# Diagrams the grammar rejects, and one it accepts but that would draw wrong (more values than categories).
BROKEN = {
    "trailing comma": "xychart-beta\n    line [1, 2, ]\n",
    "unclosed list": "xychart-beta\n    x-axis [1, 2\n    line [1, 2]\n",
    "word in data": "xychart-beta\n    line [1, a]\n",
    "unclosed title": 'xychart-beta\n    title "perf\n    line [1]\n',
    "unknown statement": "xychart-beta\n    curve [1, 2]\n",
    "wrong header": "xychart\n    line [1, 2]\n".replace("xychart", "xy-chart"),
    "empty data": "xychart-beta\n    line []\n",
}
DRAWS_WRONG = 'xychart-beta\n    x-axis "i" [1, 2]\n    line [1, 2, 3]\n'


def test_the_validator_rejects_broken_diagrams() -> None:
    for name, text in {**BROKEN, "mismatch": DRAWS_WRONG}.items():
        assert validate(text), name


def node_parse(diagrams: list[str]) -> list[dict[str, object]]:
    proc = subprocess.run(
        ["node", str(MERMAID_DIR / "parse.mjs")],
        input=json.dumps(diagrams),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: list[dict[str, object]] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def mermaid_parser() -> Path:
    """tests/mermaid with Mermaid installed: by ``npm ci`` (the pinned versions) when npm is there and it is not yet;
    the test is skipped, saying why, when node or npm is missing or the install fails (no registry)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: Mermaid's own parser cannot run (the grammar validator still checks)")
    if not (MERMAID_DIR / "node_modules" / "mermaid").is_dir():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip(
                "npm is not installed: cannot install Mermaid for its parser (the grammar validator still checks)"
            )
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(MERMAID_DIR)],
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"`npm ci --prefix tests/mermaid` failed ({last}); the grammar validator still checks")
    return MERMAID_DIR


@pytest.mark.slow  # Mermaid's own parser under node
def test_mermaids_own_parser_agrees(mermaid_parser: Path) -> None:
    ours = charts()
    results = node_parse([*ours.values(), *BROKEN.values()])
    for name, result in zip([*ours, *BROKEN], results, strict=True):
        if name in ours:
            assert result == {"ok": True, "type": "xychart"}, (name, result)
        else:
            assert result["ok"] is False, (name, result)


def test_the_safe_output_job_writes_the_summary(tmp_path: Path) -> None:
    """The shipped component's summary step, run as the runner runs it, after a record landed."""
    frontmatter, _ = load_component()
    steps = frontmatter["safe-outputs"]["jobs"]["record-iteration"]["steps"]
    step = next(s for s in steps if "summary" in str(s.get("run", "")))
    origin = tmp_path / "server" / "owner" / "repo.git"
    origin.parent.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(origin)], check=True)
    repos = make_repos(tmp_path)
    with Store.open(repos.work, remote=origin.as_uri(), max_bytes=10_000_000) as store:
        store.write_files({"perf.md": synthetic_state("perf", 20, seed=5)}, "seed")
    summary = tmp_path / "step-summary.md"
    server = (tmp_path / "server").as_uri()
    env = {"GITHUB_SERVER_URL": server, "GITHUB_REPOSITORY": "owner/repo", "GITHUB_STEP_SUMMARY": str(summary)}
    [done] = run_steps([step], env=env, contexts={"github.token": ""}, cwd=tmp_path, bin_dir=bin_dir())
    assert done.returncode == 0, done.stderr
    blocks = re.findall(r"```mermaid\n(.*?)```", summary.read_text(), re.S)
    assert len(blocks) == 1 and validate(blocks[0]) == [] and "perf: metric per iteration" in blocks[0]
    # Without a summary file (not on a runner) the step does nothing.
    [skipped] = run_steps([step], env={**env, "GITHUB_STEP_SUMMARY": ""}, contexts={"github.token": ""},
                          cwd=tmp_path, bin_dir=bin_dir())  # fmt: skip
    assert skipped.returncode == 0 and skipped.stdout == ""


def lower_history_as_seen() -> str:
    """A lower-is-better program as real files have it (issue 22, item 8): an agent's range line overlapping detailed
    entries (``Iters 172–180`` beside ``Iteration 173`` … ``180``), another ending where a detailed entry sits, entries
    out of order, and metrics with many digits; the Machine State's Best Metric is 32."""
    entries = [
        render_iteration(number=181, when="2026-05-31 10:00", status="accepted", metric="32"),
        render_iteration(number=180, when="2026-05-31 09:00", status="rejected", metric="606.759"),
    ]
    for n, metric, status in [(178, "38", "accepted"), (177, "41", "rejected"), (176, "39", "accepted"),
                              (175, "44", "rejected"), (174, "40", "accepted"), (173, "42", "accepted")]:  # fmt: skip
        entries.append(render_iteration(number=n, when="2026-05-30 10:00", status=status, metric=metric))
    entries.append("### Iters 172–180 — 2026-05-29/30 — ✅ (metrics 51->35.0115): repeated rebase attempts\n\n")
    entries.append(render_iteration(number=172, when="2026-05-29 10:00", status="accepted", metric="45"))
    entries.append("### Iters 160–171 — ✅ (metrics 80->51): early work\n\n")
    entries.append(render_iteration(number=167, when="2026-05-28 10:00", status="accepted", metric="51"))
    return new_state_file("perf", metric_direction="lower", best_metric="32").replace(
        "*(No iterations yet.)*\n", "".join(entries)
    )


def chart_lists(text: str) -> tuple[list[int], list[float], list[float], str]:
    axis = re.search(r"x-axis \"iteration\" \[(.*)\]", text)
    lines = re.findall(r"\n    line \[(.*)\]", text)
    bounds = re.search(r"y-axis \"metric\" (\S+) --> (\S+)", text)
    assert axis and bounds and len(lines) == 2, text
    return (
        [int(n) for n in axis.group(1).split(", ")],
        [float(v) for v in lines[0].split(", ")],
        [float(v) for v in lines[1].split(", ")],
        f"{bounds.group(1)} --> {bounds.group(2)}",
    )


def test_chart_of_a_lower_is_better_history_out_of_order_draws_forwards() -> None:
    history = history_rows(parse(lower_history_as_seen()), "perf")
    text = mermaid_xychart(history)
    assert text is not None and validate(text) == []
    numbers, values, best, bounds = chart_lists(text)
    # Sorted, one point per iteration: a detailed entry wins its number over a range line's end.
    assert numbers == sorted(set(numbers)) == [167, 171, 172, 173, 174, 175, 176, 177, 178, 180, 181]
    assert values[numbers.index(180)] == 606.759
    # The best so far only improves, in the Metric Direction, and ends at the Machine State's Best Metric.
    assert all(b <= a for a, b in __import__("itertools").pairwise(best))
    assert best == [51, 51, 45, 42, 40, 40, 39, 39, 38, 38, 32]
    assert best[-1] == 32
    # Round bounds that hold every value.
    assert bounds == "0 --> 700"


def test_bounds_are_round_numbers() -> None:
    from decimal import Decimal

    from statefile.views.charts import nice_bounds

    assert nice_bounds(35.0115, 606.759) == (Decimal(0), Decimal(700))
    assert nice_bounds(29, 51) == (Decimal(25), Decimal(55))
    low, high = nice_bounds(0.93, 0.93)
    assert low < Decimal("0.93") < high and (low, high) == (Decimal("0.8"), Decimal("1.05"))
    assert nice_bounds(-3, -1.5) == (Decimal(-3), Decimal("-1.5"))


def test_summary_says_when_the_history_best_is_not_the_machine_states() -> None:
    """The shape of a real file: an agent's range band ``8→51`` in other units, the table's Best Metric 34."""
    from statefile.views.summary import step_summary

    entries = [render_iteration(number=196, when="2026-04-11 13:40", status="accepted", metric="34"),
               render_iteration(number=195, when="2026-04-11 13:05", status="accepted", metric="33"),
               "### Iters 53–166 — ✅/⚠️ (metrics 8→51: feature implementations)\n\n"]  # fmt: skip
    text = new_state_file("mig", best_metric="34").replace("*(No iterations yet.)*\n", "".join(entries))
    history = history_rows(parse(text), "mig")
    row = {"program": "mig", "status": "active", "best_metric": "34", "size": 100, "percent_of_budget": 0.3}
    summary = step_summary([row], {"mig": history}, max_bytes=30720)
    assert "The history's best is 51, the Machine State's Best Metric 34" in summary
    agreeing = history_rows(parse(lower_history_as_seen()), "perf")
    row = {**row, "program": "perf", "best_metric": "32"}
    assert "Machine State's Best Metric" not in step_summary([row], {"perf": agreeing}, max_bytes=30720)


def test_a_sparkline_of_metrics_at_the_float_range_ends() -> None:
    """Found by a cold review: apply accepts metrics within 1e±308; 1e308 then -1e308 made the span overflow to
    inf and the sparkline raise (exit 70 in `summary`, the component's always-run step, and in `history`)."""
    line = sparkline([1e308, -1e308, 5.0, 1e-300])
    assert len(line) == 4 and line[0] == "█" and line[1] == "▁"
    assert len(sparkline([1e308, -1e308] * 50, width=10)) == 10
