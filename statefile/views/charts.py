"""Charts of a metric over iterations: a one-line sparkline for terminals, a Mermaid ``xychart-beta`` for GitHub.

GitHub renders Mermaid in markdown files and in job summaries (``$GITHUB_STEP_SUMMARY``), so a chart there is
plain text.  The chart type is the XY chart (``xychart-beta``): a categorical x-axis of iteration numbers and two
line series, the metric of each iteration that has one and the best metric so far.  Its data lists cannot hold
gaps, so only iterations with a numeric metric are drawn; long runs are thinned to at most ``max_points`` evenly
spaced iterations (the newest always kept).

Pure functions over :class:`statefile.views.history.ProgramHistory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from statefile.views.history import ProgramHistory

SPARK_LEVELS = "▁▂▃▄▅▆▇█"
#: Points a Mermaid chart draws at most: GitHub renders the chart about 700 px wide, so more would be unreadable.
MAX_CHART_POINTS = 60


def sparkline(values: Sequence[float], width: int = 24) -> str:
    """``values`` as a line of block characters, at most ``width`` wide (neighbours averaged when longer).

    The lowest value is ``▁`` and the highest ``█``; a flat series is a row of ``▄``; no values, ``""``.
    """
    if not values or width < 1:
        return ""
    # Scaled into [-1, 1] first: metrics may be as large as 1e±308, and the sums and differences below would
    # overflow to inf (then NaN) on the raw values.
    scale = max(abs(v) for v in values) or 1.0
    values = [v / scale for v in values]
    if len(values) > width:
        step = len(values) / width
        values = [
            sum(chunk) / len(chunk)
            for i in range(width)
            if (chunk := values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)])
        ]
    low, high = min(values), max(values)
    if high == low:
        return SPARK_LEVELS[3] * len(values)
    top = len(SPARK_LEVELS) - 1
    return "".join(SPARK_LEVELS[round((v - low) / (high - low) * top)] for v in values)


def metric_series(history: ProgramHistory) -> list[tuple[int, float, float | None]]:
    """``(iteration, metric, best so far)`` per iteration number, sorted by iteration, one point per number.

    Rows come sorted by where they start, and a range row's point sits at its end, so an agent's range line that
    overlaps detailed entries (``Iters 172–180`` beside ``Iteration 173`` … ``180``) would put ``180`` before
    ``173`` and twice.  A detailed iteration wins its number over a range's end.  The best so far is computed here,
    over the sorted points and in the program's Metric Direction (accepted iterations and range band ends count,
    as in :mod:`statefile.views.history`), so the line can only ever improve.
    """
    chosen: dict[int, tuple[float, bool]] = {}
    for row in history.rows:
        if row.value is None:
            continue
        counts = row.kind == "range" or row.status == "accepted"
        if row.kind == "iteration" or row.last not in chosen:
            chosen[row.last] = (row.value, counts)
    lower = history.direction == "lower"
    best: float | None = None
    out: list[tuple[int, float, float | None]] = []
    for number in sorted(chosen):
        value, counts = chosen[number]
        if counts and (best is None or (value < best if lower else value > best)):
            best = value
        out.append((number, value, best))
    return out


def metric_sparkline(history: ProgramHistory, width: int = 24) -> str:
    """The sparkline of ``history``'s metric over iterations (``""`` when no iteration has a numeric metric)."""
    return sparkline([value for _, value, _ in metric_series(history)], width)


def final_best(history: ProgramHistory) -> float | None:
    """The best metric the history reaches in its Metric Direction (``None`` before any accepted metric)."""
    series = metric_series(history)
    return series[-1][2] if series else None


def nice_bounds(low: float, high: float, ticks: int = 6) -> tuple[Decimal, Decimal]:
    """Axis bounds around ``[low, high]`` on a round step (1, 2, 2.5 or 5 × 10ⁿ, about ``ticks`` steps across).

    Unrounded bounds (``35.0115 --> 606.759``) put the axis labels at odd numbers; these are where a person would
    draw them (``0 --> 700``).  A flat series gets a band of about 10 % of its value around it (1 around 0).
    """
    lo, hi = Decimal(repr(low)), Decimal(repr(high))
    span = hi - lo
    if span == 0:
        span = abs(hi) / 5 or Decimal(2)
        lo, hi = lo - span / 2, hi + span / 2
    raw = span / ticks
    magnitude = Decimal(1).scaleb(raw.adjusted())
    step = next(m * magnitude for m in (Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5), Decimal(10))
                if m * magnitude >= raw)  # fmt: skip
    bottom = (lo / step).to_integral_value(rounding=ROUND_FLOOR) * step
    top = (hi / step).to_integral_value(rounding=ROUND_CEILING) * step
    return bottom, top


def number_text(value: float) -> str:
    """A number as Mermaid's grammar reads one: plain decimal, no exponent, at most 6 significant digits."""
    text = f"{value:.6g}"
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
        text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def thin(points: Sequence[tuple[int, float]], limit: int) -> list[tuple[int, float]]:
    """At most ``limit`` of ``points``, evenly spaced, the first and the last always kept."""
    if len(points) <= limit:
        return list(points)
    if limit < 2:
        return [points[-1]]
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _decimal_text(value: Decimal) -> str:
    """A bound as Mermaid reads a number: plain decimal, no exponent, no trailing zeros."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _quoted(text: str) -> str:
    # A quoted string in the grammar runs to the next double quote; nothing can escape one.
    return '"' + text.replace('"', "'").replace("\n", " ") + '"'


def mermaid_xychart(history: ProgramHistory, *, max_points: int = MAX_CHART_POINTS) -> str | None:
    """A Mermaid ``xychart-beta`` of ``history``'s metric per iteration and best so far (``None``: no metric).

    The text is the diagram only (no code fence); :mod:`statefile.views.summary` wraps it in a ```` ```mermaid ````
    block.
    """
    series = metric_series(history)
    if not series:
        return None
    chosen = thin([(n, v) for n, v, _ in series], max_points)
    best_at = {n: b for n, _, b in series}
    values = [value for _, value in chosen]
    # Before the first accepted metric there is no best yet; the line starts flat at the first best there is.
    first_best = next((b for _, _, b in series if b is not None), None)
    best = [b if (b := best_at[n]) is not None else first_best for n, _ in chosen]
    drawn = [b for b in best if b is not None]
    low, high = nice_bounds(min(values + drawn), max(values + drawn))
    lines = [
        "xychart-beta",
        f"    title {_quoted(f'{history.program}: metric per iteration ({history.direction} is better)')}",
        f"    x-axis {_quoted('iteration')} [{', '.join(str(n) for n, _ in chosen)}]",
        f"    y-axis {_quoted('metric')} {_decimal_text(low)} --> {_decimal_text(high)}",
        f"    line [{', '.join(number_text(v) for v in values)}]",
    ]
    if len(drawn) == len(values):
        lines.append(f"    line [{', '.join(number_text(v) for v in drawn)}]")
    return "\n".join(lines) + "\n"
