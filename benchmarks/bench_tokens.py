"""What the agent pays per iteration, in bytes and estimated tokens: statefile's way against the upstream prompt's.

    python benchmarks/bench_tokens.py [--iterations N] [--budget CHARS] [--corpus DIR]

A long history is replayed one iteration at a time through statefile (`record` by the upstream rules, compaction by
policy, the archive in a folder store): the real corpus's longest program histories when the corpus is there
(``$STATEFILE_CORPUS`` or ../shared/corpus/real: every distinct detailed entry of a program across its snapshots,
oldest first, its lessons added along the way), and always a synthetic one with the same shape
(tests/synthetic.py: the upstream template, lessons, foreclosed avenues).  At each iteration it counts
what the agent reads and writes:
  statefile      reads memory.md as `statefile prepare` writes it (the core view, CORE_BUDGET characters at most, its
                 hints naming the component's tools), plus every read-tool call it has to make, and the tools'
                 one-line reply; writes its `record_iteration` tool call (the JSON arguments).  A call is counted
                 whenever the view does not hold a fact the agent needs.  The model of "needs": before trying its
                 change, the agent needs the outcome of any earlier iteration that tried much the same thing (the
                 most similar earlier Change by word overlap, Jaccard >= 0.5 over words of 3+ letters; real
                 histories retry ideas, the synthetic one recombines a small vocabulary).  When that iteration is
                 not in memory.md whole, the agent calls statefile_search with its change's first five words and
                 then statefile_expand on that iteration (why it failed is in the Notes, not the hit line): both
                 requests and both answers are counted, as gh-aw's tool server returns them (the shell handler's
                 JSON.stringify({stdout, stderr, outputs})), with the component's own caps
  statefile-8000 the view before the tools: `render PROGRAM --budget 8000` (level full) and nothing else
  upstream       reads the whole state file and writes it back whole (the upstream prompt: read the state file,
                 update it) — the same memory statefile keeps, so this is the upstream way at its best
  upstream-edit  reads the whole file and writes only the new entry and the changed Machine State rows (old and
                 new text, as an edit tool sends them): a lower bound for an agent that edits in place
  upstream-raw   the upstream prompt taken literally: every entry prepended, nothing ever folded (it says nothing
                 about size), whole file read and written; the note says from which iteration the file is over
                 max-file-size, i.e. when repo-memory starts refusing the push

Tokens are estimated as ceil(UTF-8 bytes / 4) (statefile.views.history.estimate_tokens).  Then, at the end, it asks
whether the facts of every earlier iteration (its Change line) are still reachable: in memory.md alone; by
`search` on that Change's own text (its first 30 words; recall at 5: a top-5 hit on that iteration or quoting it); by
`expand N` (what statefile_expand runs); and, for the upstream way, anywhere in the whole file.  Everything is
counted, not timed, so the ratios are exact for this input.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path

from _fixtures import synthetic_state
from _timing import Row

from statefile.app.reading import expand_iteration, render_program, search_memory
from statefile.app.writing import record_iteration
from statefile.cli import cli
from statefile.cli.run import invoke
from statefile.errors import NotFoundError, UsageError
from statefile.model.document import parse
from statefile.model.history import Iteration
from statefile.model.template import new_state_file
from statefile.model.text import utf8_size
from statefile.policy.compaction import CompactionPolicy
from statefile.policy.lessons import numbered_lessons
from statefile.policy.rules import UPSTREAM_STATUSES, RecordRequest
from statefile.store import FolderStore
from statefile.views.render import CORE_BUDGET, TOOL_EXPAND, TOOL_SEARCH, TOOLS

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parents[1] / "shared" / "corpus" / "real"
RENDER_BUDGET = 8000
#: What the component's tools pass (workflows/shared/statefile.md, mcp-scripts): search --limit 8 --max-chars 3000,
#: expand --max-chars 6000.
SEARCH_ARGS = ["--limit", "8", "--hints", "tools", "--max-chars", "3000"]
EXPAND_ARGS = ["--hints", "tools", "--max-chars", "6000"]
#: The reply of the record_iteration tool (the component's `output:`).
RECORD_REPLY = "Recorded in the program's memory."
SIMILAR = 0.5
#: Recall at 5 searches with an iteration's own Change text, its first RECALL_WORDS words (all of a typical Change):
#: the words that set it apart from its retries are rarely among the first five.
RECALL_WORDS = 30
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
_WORD = re.compile(r"[A-Za-z0-9][\w.+-]*")


def tokens(nbytes: int) -> int:
    """Estimated tokens of ``nbytes`` UTF-8 bytes: ceil(bytes / 4), as statefile status counts them."""
    return math.ceil(nbytes / 4)


@dataclass(frozen=True)
class Step:
    """One iteration to replay: what the agent reports, and the lesson it adds (if any)."""

    status: str
    metric: str | None
    change: str
    notes: str | None
    commit: str | None
    lesson: str | None


@dataclass
class Replay:
    """What one replay measured: per-iteration bytes for each way, and reachability at the end."""

    name: str
    iterations: int
    sf_read: list[int]
    sf_write: list[int]
    view_read: list[int]
    calls: list[int]
    call_bytes: list[int]
    old_read: list[int]
    up_read: list[int]
    up_write: list[int]
    edit_write: list[int]
    raw_file: list[int]
    reach: dict[str, int]
    asked: int
    final_file: int
    archive_parts: int


# -- histories ------------------------------------------------------------------------------------------------------


def _commit(text: str | None) -> str | None:
    value = (text or "").strip("` ")
    return value if re.fullmatch(r"[0-9A-Za-z._/-]{1,64}", value) else None


def _metric(text: str | None) -> str | None:
    match = re.match(r"\s*[~≈]?([+-]?\d+(?:\.\d+)?)", text or "")
    if not match:
        return None
    try:
        Decimal(match.group(1))
    except InvalidOperation:
        return None
    return match.group(1)


def _status(word: str | None) -> str:
    word = (word or "").strip().lower()
    return word if re.fullmatch(r"[a-z][a-z0-9-]{0,30}", word) else "accepted"


def step_of(entry: Iteration, lesson: str | None) -> Step:
    """The record an agent makes for a real entry (its status, metric, change, notes, commit)."""
    change = entry.change or entry.notes or entry.heading.lstrip("# ")
    return Step(_status(entry.status), _metric(entry.metric), " ".join(change.split()),
                " ".join(entry.notes.split()) if entry.notes else None, _commit(entry.commit), lesson)  # fmt: skip


def corpus_histories(corpus: Path, count: int = 2) -> list[tuple[str, list[Step]]]:
    """The ``count`` longest real program histories: every distinct detailed entry across a program's snapshots
    (the latest snapshot's copy of a number wins), oldest first, with the latest snapshot's lessons spread over it."""
    by_program: dict[str, dict[int, Iteration]] = {}
    lessons: dict[str, list[str]] = {}
    for path in sorted(corpus.glob("*.md")):
        program = "__".join(path.stem.split("__")[:3])
        doc = parse(path.read_bytes().decode("utf-8", "surrogateescape"))
        for entry in doc.history:
            if isinstance(entry, Iteration) and not entry.numbers and not entry.partial:
                by_program.setdefault(program, {})[entry.number] = entry
        found = [lesson.text for lesson in numbered_lessons(doc)]
        if len(found) >= len(lessons.get(program, [])):
            lessons[program] = found
    longest = sorted(by_program, key=lambda p: (-len(by_program[p]), p))[:count]
    out = []
    for program in longest:
        entries = [by_program[program][n] for n in sorted(by_program[program])]
        pool = lessons.get(program, [])
        every = max(1, len(entries) // max(1, len(pool))) if pool else 0
        steps = []
        for index, entry in enumerate(entries):
            lesson = pool[index // every] if every and index % every == 0 and index // every < len(pool) else None
            steps.append(step_of(entry, lesson.encode("utf-8", "replace").decode() if lesson else None))
        out.append((program.split("__")[-1], steps))
    return out


def synthetic_history(iterations: int) -> list[Step]:
    """A synthetic history in the upstream template's shape (tests/synthetic.py), oldest first."""
    doc = parse(synthetic_state("synthetic", iterations, seed=11, lessons=12))
    entries = sorted(doc.iterations, key=lambda e: e.number)
    pool = [item.text for item in numbered_lessons(doc)]
    every = max(1, iterations // max(1, len(pool)))
    return [
        step_of(entry, pool[index // every] if index % every == 0 and index // every < len(pool) else None)
        for index, entry in enumerate(entries)
    ]


# -- the replay -----------------------------------------------------------------------------------------------------


def command_line(program: str, step: Step) -> str:
    """The `statefile record …` command the agent writes (what it costs in output tokens)."""
    args = ["statefile", "record", program, "--status", step.status]
    if step.status not in UPSTREAM_STATUSES:
        args.append("--new-status")  # a word outside the upstream four is asked for explicitly
    for flag, value in (("--metric", step.metric), ("--change", step.change), ("--notes", step.notes),
                        ("--commit", step.commit), ("--lesson", step.lesson)):  # fmt: skip
        if value:
            args += [flag, value]
    return shlex.join(args)


def tool_call(program: str, step: Step) -> str:
    """The `record_iteration` call the agent writes: its JSON arguments (all strings, as the component declares)."""
    arguments = {"program": program, "status": step.status, "metric": step.metric, "change": step.change,
                 "notes": step.notes, "commit": step.commit, "lessons": step.lesson}  # fmt: skip
    return json.dumps({k: v for k, v in arguments.items() if v}, ensure_ascii=False)


def run_tool(folder: Path, name: str, arguments: dict[str, object], argv: list[str]) -> int:
    """Bytes the agent reads and writes for one read-tool call: its request (name and JSON arguments) and the
    answer as gh-aw's shell handler returns it, the command's stdout in ``JSON.stringify({stdout, stderr,
    outputs})``; the command runs in process, with the component's options."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        invoke(cli, ["--dir", str(folder), *argv])
    answer = json.dumps({"stdout": out.getvalue(), "stderr": err.getvalue(), "outputs": {}}, ensure_ascii=False,
                        separators=(",", ":"))  # fmt: skip
    request = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return utf8_size(request) + utf8_size(answer)


def _content(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text) if len(w) >= 3}


def needed(changes: dict[int, str], change: str) -> int | None:
    """The earlier iteration whose outcome the agent needs before trying ``change`` (see the module docstring)."""
    words = _content(change)
    best, score = None, 0.0
    for number, earlier in changes.items():
        other = _content(earlier)
        if words and other:
            similarity = len(words & other) / len(words | other)
            if similarity > score:
                best, score = number, similarity
    return best if score >= SIMILAR else None


def memory_view(store: FolderStore, program: str) -> str:
    """memory.md as `statefile prepare` writes it (its header comment, the core view with tool hints)."""
    view = render_program(store, program, budget=CORE_BUDGET, level="core", hints=TOOLS).text
    return (f"<!-- statefile: a read-only view of {program}.md on the memory branch. Do not edit state files: "
            f"report your iteration with the record_iteration tool. -->\n{view}")  # fmt: skip


def _changed_rows(before: str, after: str) -> int:
    """Bytes of Machine State rows that differ (old and new text), what an edit tool sends besides the entry."""
    old = {line for line in before.splitlines() if line.startswith("| ")}
    new = {line for line in after.splitlines() if line.startswith("| ")}
    return sum(utf8_size(line) + 1 for line in old ^ new)


def replay(name: str, steps: list[Step], workdir: Path) -> Replay:
    """Record every step through statefile, counting what each way reads and writes, then check reachability."""
    folder = workdir / name
    folder.mkdir()
    program = "perf"
    store = FolderStore(folder, max_bytes=30720)
    (folder / f"{program}.md").write_text(new_state_file(program, goal=f"Replay of {name}", metric="metric"))
    policy = CompactionPolicy(max_bytes=30720, program=program)
    result = Replay(name, len(steps), [], [], [], [], [], [], [], [], [], [], {}, 0, 0, 0)
    # The upstream prompt's own file: the same records with nothing ever folded (no budget, keep everything).
    raw_folder = workdir / f"{name}-raw"
    raw_folder.mkdir()
    raw_store = FolderStore(raw_folder, max_bytes=10**9)
    (raw_folder / f"{program}.md").write_text((folder / f"{program}.md").read_text())
    keep_all = CompactionPolicy(max_bytes=10**9, keep_recent=10**6, program=program)
    changes: dict[int, str] = {}
    for index, step in enumerate(steps):
        now = START + timedelta(hours=6 * index)
        before = store.read_text(program) or ""
        old_view = render_program(store, program, budget=RENDER_BUDGET, level="full").text
        view = memory_view(store, program)
        calls = 0
        wanted = needed(changes, step.change)
        if wanted is not None and _words(changes[wanted]) not in _words(view):
            # Not in memory.md: search for the idea, then read the entry it found whole.
            query = " ".join(_WORD.findall(step.change)[:5]) or step.change
            calls += run_tool(folder, TOOL_SEARCH, {"query": query}, ["search", "--program", program, *SEARCH_ARGS,
                                                                      "--", query])  # fmt: skip
            calls += run_tool(folder, TOOL_EXPAND, {"iteration": wanted}, ["expand", *EXPAND_ARGS, "--", program,
                                                                          str(wanted)])  # fmt: skip
            result.calls.append(1)
        else:
            result.calls.append(0)
        request = RecordRequest(status=step.status, metric=Decimal(step.metric) if step.metric else None,
                                change=step.change, notes=step.notes, commit=step.commit, lesson=step.lesson,
                                at=now, new_status=step.status not in UPSTREAM_STATUSES)  # fmt: skip
        outcome = record_iteration(store, program, request, policy, now=now)
        assert outcome is not None  # no item marker: a record always makes an entry
        record_iteration(raw_store, program, request, keep_all, now=now)
        result.raw_file.append(utf8_size(raw_store.read_text(program) or ""))
        after = store.read_text(program) or ""
        changes[outcome.iteration] = step.change
        result.view_read.append(utf8_size(view))
        result.call_bytes.append(calls)
        result.sf_read.append(utf8_size(view) + calls + utf8_size(RECORD_REPLY))
        result.sf_write.append(utf8_size(tool_call(program, step)))
        reply = f"recorded iteration {outcome.iteration} of {program} ({outcome.status}), {outcome.size} bytes"
        result.old_read.append(utf8_size(old_view) + utf8_size(reply))
        result.up_read.append(utf8_size(before))
        result.up_write.append(utf8_size(after))
        new_entry = parse(after).history[0].raw if parse(after).history else ""
        result.edit_write.append(utf8_size(new_entry) + _changed_rows(before, after))
    final = store.read_text(program) or ""
    result.final_file = utf8_size(final)
    result.archive_parts = len(store.archive_parts(program))
    view = _words(memory_view(store, program))
    whole = _words(final)
    reach = {"memory.md": 0, "search": 0, "expand": 0, "memory.md+search+expand": 0,
             "the file as statefile keeps it": 0}  # fmt: skip
    for number, change in changes.items():
        fact = _words(change)
        in_view = fact in view
        query = " ".join(_WORD.findall(change)[:RECALL_WORDS]) or change
        try:
            hits = search_memory(store, query, program=program, limit=5)
        except UsageError:
            hits = []
        found = any(h.iteration == number or fact in _words(h.line) for h in hits)
        try:
            expanded = fact in _words(expand_iteration(store, program, number)[1])
        except NotFoundError:
            expanded = False
        reach["memory.md"] += in_view
        reach["search"] += found
        reach["expand"] += expanded
        reach["memory.md+search+expand"] += in_view or found or expanded
        reach["the file as statefile keeps it"] += fact in whole
    result.reach = reach
    result.asked = len(changes)
    store.close()
    raw_store.close()
    return result


def _words(text: str) -> str:
    return " ".join(text.split()).casefold()


# -- reporting ------------------------------------------------------------------------------------------------------


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def summary(result: Replay) -> dict[str, float]:
    """Mean bytes per iteration over the second half of the replay (a long-running program's steady state)."""
    half = len(result.sf_read) // 2
    pick = slice(half, None)
    return {key: _mean(getattr(result, key)[pick]) for key in ("sf_read", "sf_write", "up_read", "up_write",
                                                                 "edit_write", "raw_file", "view_read", "call_bytes",
                                                                 "old_read")}  # fmt: skip


def rows(quick: bool = False, iterations: int | None = None, corpus: Path | None = None) -> list[Row]:
    """Rows for benchmarks/run.py (``ms`` holds estimated tokens per iteration; see :func:`table`)."""
    corpus = corpus or Path(os.environ.get("STATEFILE_CORPUS") or DEFAULT_CORPUS)
    histories: list[tuple[str, list[Step]]] = []
    if corpus.is_dir() and any(corpus.glob("*.md")):
        histories += [(f"real: {name}", steps) for name, steps in corpus_histories(corpus)]
    count = iterations or (120 if quick else 300)
    histories.append(("synthetic", synthetic_history(count)))
    out: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="statefile-bench-tokens-") as tmp:
        for index, (name, steps) in enumerate(histories):
            result = replay(f"h{index}", steps, Path(tmp))
            out.extend(_rows(name, result))
    return out


def _rows(name: str, result: Replay) -> list[Row]:
    means = summary(result)
    size = f"{name} ({result.iterations} iterations)"
    sf = tokens(round(means["sf_read"])) + tokens(round(means["sf_write"]))
    up = tokens(round(means["up_read"])) + tokens(round(means["up_write"]))
    edit = tokens(round(means["up_read"])) + tokens(round(means["edit_write"]))
    raw = 2 * tokens(round(means["raw_file"]))  # read before (about the size after) and write back
    over = next((i + 1 for i, size in enumerate(result.raw_file) if size > 30720), None)
    over_note = f"over 30,720 B from iteration {over}: repo-memory refuses the push" if over else "never over 30,720 B"
    reach = ", ".join(f"{k} {v}/{result.asked}" for k, v in result.reach.items())
    old = tokens(round(means["old_read"])) + tokens(round(means["sf_write"]))
    half = result.calls[len(result.calls) // 2 :]
    recall = result.reach["search"] / result.asked if result.asked else 0.0
    reachable = result.reach["memory.md+search+expand"]
    return [
        Row("tokens", size, "statefile: memory.md + read tools as needed + record_iteration", sf,
            note=f"read {tokens(round(means['sf_read'])):,} (memory.md {tokens(round(means['view_read'])):,}, at most "
            f"{max(result.view_read):,} B: a view of at most {CORE_BUDGET:,} characters and its header line; tool "
            f"calls {tokens(round(means['call_bytes'])):,}: search + expand in {sum(half)} of {len(half)} "
            "iterations) + "
            f"write {tokens(round(means['sf_write'])):,}"),
        Row("tokens", size, "statefile before the tools: render --budget 8000 + record", old, versus="statefile",
            ratio=old / sf,
            note=f"read {tokens(round(means['old_read'])):,} + write {tokens(round(means['sf_write'])):,}"),
        Row("tokens", size, "upstream: read the whole file, write it back", up, versus="statefile", ratio=up / sf,
            note=f"read {tokens(round(means['up_read'])):,} + write {tokens(round(means['up_write'])):,}"),
        Row("tokens", size, "upstream, editing in place (lower bound)", edit, versus="statefile", ratio=edit / sf,
            note=f"read {tokens(round(means['up_read'])):,} + write {tokens(round(means['edit_write'])):,}"),
        Row("tokens", size, "upstream as the prompt says: nothing folded, whole file", raw, versus="statefile",
            ratio=raw / sf, note=f"file {round(means['raw_file']):,} B on average, {result.raw_file[-1]:,} B at the "
            f"end; {over_note}"),
        Row("tokens", size, "facts of earlier iterations still reachable", float(result.asked),
            note=f"{reach}; search recall at 5 {recall:.0%}; reachable through memory.md and the tools "
            f"{reachable}/{result.asked}; final file {result.final_file:,} B, {result.archive_parts} archive part(s)"),
    ]  # fmt: skip


def table(rows: list[Row]) -> list[str]:
    """The markdown table benchmarks/run.py writes for this benchmark (tokens, not milliseconds)."""
    lines = [
        "Tokens per iteration are means over the second half of each replay (a long-running program's steady state).",
        "",
        "| history | flow | tokens per iteration | ratio (upstream ÷ statefile) | read + write / notes |",
        "|---|---|---:|---:|---|",
    ]
    for r in rows:
        if r.flow.startswith("facts"):
            lines.append(f"| {r.size} | {r.flow} | — | — | {r.note} |")
        else:
            ratio = f"{r.ratio:.1f}×" if r.ratio is not None else ""
            lines.append(f"| {r.size} | {r.flow} | {r.ms:,.0f} | {ratio} | {r.note} |")
    return lines


def _iter_rows(result_rows: list[Row]) -> Iterator[str]:
    for r in result_rows:
        yield f"{r.size:<44} {r.flow:<50} {r.ms:>8,.0f}  {f'{r.ratio:.1f}x' if r.ratio else '':>6}  {r.note}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=300, help="length of the synthetic history")
    parser.add_argument(
        "--corpus", type=Path, help="real state files (default $STATEFILE_CORPUS, ../shared/corpus/real)"
    )
    args = parser.parse_args()
    for line in _iter_rows(rows(iterations=args.iterations, corpus=args.corpus)):
        print(line)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
