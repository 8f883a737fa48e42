"""What one agent report costs the safe-output job in statefile's own code, however big the agent made it.

    python benchmarks/bench_apply.py [--reps N]

An agent output of about 1 MB (one ``record_iteration`` item: 1,000 ``lessons`` lines, as many
``future_directions`` and ``foreclosed_avenues``, and 700 KB of ``notes``) is timed in process, without git,
through everything ``statefile apply`` does with it: reading the JSON, cleaning and capping every text
(``request_from_item``), and the record pipeline on a 300-iteration state file (the update rules, compaction,
the commit message: ``record_update``).  Goal: well under a second.

The alternative, measured in the same run, is what apply did before the lists were capped and added in one pass:
every line of the three lists appended one by one (``StateDocument.add_lesson`` and friends, each re-reading its
section), on the same document, with the same 1,000 lines per list.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone

from _fixtures import synthetic_state
from _timing import Row, compare, measure

from statefile.app.ghaw import item_marker, request_from_item
from statefile.app.writing import RunContext, record_update
from statefile.integrations.ghaw import parse_agent_output
from statefile.model.document import StateDocument, parse
from statefile.policy.compaction import CompactionPolicy
from statefile.store.base import Store

LINES = 1000
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


def agent_output(lines: int = LINES) -> str:
    """One hostile-sized item: three lists of ``lines`` lines of about 100 bytes and 700 KB of notes."""

    def block(word: str) -> str:
        return "\n".join(f"- {word} {n}: " + "lorem ipsum dolor sit amet " * 3 for n in range(lines))

    item = {
        "type": "record_iteration",
        "program": "bench",
        "status": "accepted",
        "metric": "42.5",
        "change": "Vectorise the inner loop",
        "notes": "n" * 700_000,
        "lessons": block("lesson"),
        "future_directions": block("idea"),
        "foreclosed_avenues": block("avenue"),
    }
    return json.dumps({"items": [item], "errors": []})


class _NoStore:
    """``record_update`` asks the store only when the program is missing, which it never is here."""


def apply_once(text: str, doc: StateDocument, policy: CompactionPolicy) -> StateDocument:
    """What apply does with one output, short of the git write."""
    output = parse_agent_output(text, "bench")
    item = output.items[0]
    context = RunContext(selected="bench", metric_direction="higher", run_id="1", run_attempt="1")
    program, request, _ = request_from_item(item, context=context, run_url=None, marker=item_marker(item, 1, "1", "1"))
    store: Store = _NoStore()  # type: ignore[assignment]
    return record_update(store, program, request, policy, now=NOW)(doc).document


def one_by_one(text: str, doc: StateDocument) -> StateDocument:
    """The old way: every list line appended on its own (each append re-reads the section)."""
    item = json.loads(text)["items"][0]
    for line in item["lessons"].splitlines():
        doc = doc.with_lesson(line[2:])
    for line in item["future_directions"].splitlines():
        doc = doc.with_future_direction(line[2:])
    for line in item["foreclosed_avenues"].splitlines():
        doc = doc.with_foreclosed(line[2:])
    return doc


def rows(quick: bool = False) -> list[Row]:
    """Rows for benchmarks/run.py."""
    text = agent_output()
    doc = parse(synthetic_state("bench", 300, seed=1, lessons=30, foreclosed=20))
    policy = CompactionPolicy(max_bytes=30720)
    reps = 3 if quick else 7
    ms = measure(
        {"apply": (lambda: apply_once(text, doc, policy), reps), "one by one": (lambda: one_by_one(text, doc), 1)}
    )
    size = f"{len(text.encode()) / 1024:,.0f} KB output, {LINES:,} lines per list"
    bench = "agent report"
    return [
        Row(bench, size, "apply (clean, cap, record, compact)", ms["apply"], goal="< 1000 ms", met=ms["apply"] < 1000),
        Row(bench, size, "old: every list line added one by one", ms["one by one"]),
        compare(bench, size, ms, "apply", "one by one", note="the same lines; apply keeps 5 per list, capped"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for row in rows(args.quick):
        ratio = f"  ({row.ratio:.3f}× {row.versus})" if row.ratio is not None else ""
        print(f"{row.flow:45} {row.ms:10.1f} ms{ratio}  {row.note}")


if __name__ == "__main__":
    main()
