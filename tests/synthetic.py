"""Deterministic synthetic state files in the upstream template's format, for tests and benchmarks.

``synthetic_state("perf", 500, seed=3)`` always returns the same text: a fresh template (from
:func:`statefile.model.template.new_state_file`) filled with a Machine State that agrees with the history, lessons,
foreclosed avenues and ``iterations`` detailed entries, newest first, written by
:func:`statefile.model.history.render_iteration`.  Optionally the oldest iterations are already folded into
agent-written range lines in the shapes found in real files, so compaction has old ranges to merge.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from statefile.errors import UsageError
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file

_VERBS = ("Add", "Vectorize", "Cache", "Inline", "Batch", "Rewrite", "Split", "Fuse", "Prune", "Memoize")
_OBJECTS = (
    "the CSV tokenizer",
    "groupby aggregation",
    "the merge join loop",
    "rolling window sums",
    "string accessor ops",
    "datetime parsing",
    "the index lookup table",
    "sparse column storage",
    "the expression evaluator",
    "categorical encoding",
    "null-mask propagation",
    "the sort comparator",
)
_OUTCOMES = (
    "benchmarks improved on the large fixture",
    "no measurable change; reverted",
    "CI failed on a flaky network test",
    "faster on small inputs, slower on large ones",
    "type checker flagged an unsafe cast",
    "memory use dropped but latency rose",
)
_LESSONS = (
    "Profile before optimizing {obj}: the hot path was not where expected.",
    "Keep {obj} allocation-free inside loops; GC pauses dominate at scale.",
    "Property tests catch edge cases in {obj} that unit tests miss.",
    "Run the full benchmark twice; single runs of {obj} vary by about 5%.",
    "Typed arrays beat plain arrays for {obj} once n exceeds 10k.",
    "Commit small: a failing change to {obj} is easier to bisect.",
)
_FORECLOSED = (
    "Rewriting {obj} in WebAssembly: build complexity outweighed a 3% gain.",
    "Caching {obj} globally: invalidation bugs in concurrent runs.",
    "Replacing {obj} with a third-party library: license incompatible.",
)
# Range-line shapes agents wrote in real files; {a} {b} first/last, {x} {y} metric band, {d} a date.
_AGENT_RANGE_SHAPES = (
    "### Iters {a}–{b} — ✅ (metrics {x}→{y}): steady progress on core features",
    "### Iters {a}-{b} -- {d} -- ✅ (metrics {x}->{y}): batch of accepted changes",
    "### Iterations {a}–{b} — Various features (condensed)",
    "### Iters {a}–{b} — ✅/⚠️ mix | metrics {x}→{y}. Baseline benchmarks established.",
    "### Iters {a}–{b}: ({x}→{y}) foundation work",
)
_START = datetime(2026, 1, 1, 0, 0, tzinfo=timezone.utc)


def synthetic_state(
    program: str,
    iterations: int,
    *,
    seed: int = 0,
    lessons: int = 8,
    foreclosed: int = 3,
    direction: str = "higher",
    agent_ranges: int = 0,
) -> str:
    """A state file for ``program`` with ``iterations`` iterations, deterministic in its arguments.

    ``lessons`` and ``foreclosed`` set how many bullets those sections get (0 keeps the template's placeholder).
    ``direction`` is the Metric Direction (``higher`` or ``lower``); metrics improve that way on accepted
    iterations.  ``agent_ranges`` > 0 folds the oldest iterations into that many agent-written range lines
    (various real-world shapes), leaving the newest 12 in detail.
    """
    if iterations < 0 or lessons < 0 or foreclosed < 0 or agent_ranges < 0:
        raise UsageError("synthetic_state: counts must be >= 0; pass non-negative iterations/lessons/foreclosed")
    if direction not in ("higher", "lower"):
        raise UsageError(f"synthetic_state: direction must be 'higher' or 'lower', not {direction!r}")
    rng = random.Random(f"{program}:{seed}")
    sign = 1.0 if direction == "higher" else -1.0
    best = 100.0
    when = _START
    statuses: list[str] = []
    entries: list[str] = []
    metrics: list[float] = []  # best metric after each iteration (index 0 = iteration 1)
    for number in range(1, iterations + 1):
        when += timedelta(minutes=rng.randint(30, 300))
        roll = rng.random()
        status = "accepted" if roll < 0.55 else "rejected" if roll < 0.85 else "error"
        obj = rng.choice(_OBJECTS)
        change = f"{rng.choice(_VERBS)} {obj}"
        metric: str | None = None
        delta: str | None = None
        previous = best
        commit: str | None = None
        if status == "accepted":
            best = round(best + sign * rng.uniform(0.1, 2.5), 2)
            metric, delta, commit = f"{best:g}", f"{sign * abs(best - previous):+.2f}", f"{rng.getrandbits(28):07x}"
        elif status == "rejected":
            tried = round(previous - sign * rng.uniform(0.1, 3.0), 2)
            metric, delta = f"{tried:g}", f"{tried - previous:+.2f}"
        metrics.append(best)
        statuses.append(status)
        entries.append(
            render_iteration(
                number=number,
                when=when.strftime("%Y-%m-%d %H:%M"),
                status=status,
                run_url=f"https://github.com/example/{program}/actions/runs/{10_000_000 + number * 7919}",
                change=change,
                metric=metric,
                previous_best=f"{previous:g}" if metric is not None else None,
                delta=delta,
                commit=commit,
                ci_fix_attempts=rng.choice((0, 0, 0, 1, 2)),
                notes=f"{rng.choice(_OUTCOMES).capitalize()}.",
            )
        )
    entries.reverse()
    history = entries
    if agent_ranges and iterations > 12:
        history = entries[:12] + _agent_range_lines(rng, iterations - 12, agent_ranges, metrics)
    text = new_state_file(
        program,
        goal=f"Make {program} faster, one measured change at a time.",
        metric="score",
        metric_direction=direction,
        iteration_count=iterations,
        best_metric=f"{best:g}" if iterations else None,
        last_run=when.strftime("%Y-%m-%dT%H:%M:%SZ") if iterations else None,
        recent_statuses=statuses[-10:] or None,
        issue="#1",
    )
    text = _fill(text, "Key findings and insights accumulated across iterations.", _bullets(rng, _LESSONS, lessons))
    text = _fill(
        text, "Approaches that have been conclusively ruled out, with reasons.", _bullets(rng, _FORECLOSED, foreclosed)
    )
    if history:
        text = _replace_once(text, "*(No iterations yet.)*\n", "".join(history))
    return text


def _agent_range_lines(rng: random.Random, covered: int, count: int, metrics: list[float]) -> list[str]:
    """``count`` range lines covering iterations 1..covered, newest first, each in a real agent shape."""
    count = min(count, covered)
    cuts = sorted(rng.sample(range(1, covered), count - 1)) if count > 1 else []
    bounds = [0, *cuts, covered]
    lines: list[str] = []
    for index in range(count):
        a, b = bounds[index] + 1, bounds[index + 1]
        shape = _AGENT_RANGE_SHAPES[index % len(_AGENT_RANGE_SHAPES)]
        before = metrics[a - 2] if a >= 2 else 100.0
        day = (_START + timedelta(days=a // 6)).strftime("%Y-%m-%d")
        lines.append(shape.format(a=a, b=b, x=f"{before:g}", y=f"{metrics[b - 1]:g}", d=day) + "\n\n")
    lines.reverse()
    return lines


def _bullets(rng: random.Random, shapes: tuple[str, ...], count: int) -> list[str]:
    return [f"- {rng.choice(shapes).format(obj=rng.choice(_OBJECTS))} (noted at step {i + 1})" for i in range(count)]


def _fill(text: str, intro: str, bullets: list[str]) -> str:
    if not bullets:
        return text
    return _replace_once(text, f"{intro}\n\n- *(none yet)*\n", f"{intro}\n\n" + "\n".join(bullets) + "\n")


def _replace_once(text: str, old: str, new: str) -> str:
    if old not in text:
        # The template changed shape; fail loudly rather than produce a file missing a section's content.
        raise UsageError(f"synthetic_state: template text {old[:40]!r} not found; update statefile/synthetic.py")
    return text.replace(old, new, 1)
