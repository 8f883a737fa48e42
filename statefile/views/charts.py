"""Charts of a metric over iterations: a one-line sparkline for terminals, a Mermaid ``xychart-beta`` for GitHub
(which renders Mermaid in markdown files and job summaries); only iterations with a numeric metric are drawn."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from statefile.views.history import HistoryRow, ProgramHistory, with_best

SPARK_LEVELS = "▁▂▃▄▅▆▇█"
#: Points a Mermaid chart draws at most: GitHub renders it about 700 px wide.
MAX_CHART_POINTS = 60


def sparkline(values: Sequence[float], width: int = 24) -> str:
    """``values`` as ``▁`` (lowest) to ``█`` (highest), at most ``width`` wide (neighbours averaged)."""
    if not values or width < 1:
        return ""
    # Scaled into [-1, 1]: sums of metrics near 1e308 would overflow.
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
    """``(iteration, metric, best so far)``, one point per number in order (a detailed iteration wins its number
    over an overlapping range's end), the best recomputed over the sorted points so that it only improves."""
    chosen: dict[int, HistoryRow] = {}
    for row in history.rows:
        if row.value is not None and (row.kind == "iteration" or row.last not in chosen):
            chosen[row.last] = row
    rows = with_best([chosen[number] for number in sorted(chosen)], history.direction)
    return [(row.last, row.value, row.best) for row in rows if row.value is not None]


def metric_sparkline(history: ProgramHistory, width: int = 24) -> str:
    """The sparkline of ``history``'s metric over iterations (``""`` when no iteration has a numeric metric)."""
    return sparkline([value for _, value, _ in metric_series(history)], width)


def trend_line(history: ProgramHistory) -> str:
    """``  metric ▁▂▄▆█ 100.65 → 270 over 241 iterations (best 270, higher is better)``, or ``""``."""
    points = history.points()
    if not points:
        return ""
    best = history.best_points()
    return (
        f"  metric {metric_sparkline(history, 32)} {points[0][1]:g} → {points[-1][1]:g} over "
        f"{history.iterations} iterations" + (f" (best {best[-1][1]:g}, {history.direction} is better)" if best else "")
    )


def nice_bounds(low: float, high: float, ticks: int = 6) -> tuple[Decimal, Decimal]:
    """Axis bounds around ``[low, high]`` on a round step (1, 2, 2.5 or 5 × 10ⁿ, about ``ticks`` steps across);
    a flat series gets a band of about 10 % around it."""
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
    return _decimal_text(Decimal(text)) if "e" in text else "0" if text == "-0" else text


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
    """A Mermaid string: nothing can escape a double quote in one."""
    return '"' + text.replace('"', "'").replace("\n", " ") + '"'


def mermaid_xychart(history: ProgramHistory, *, max_points: int = MAX_CHART_POINTS) -> str | None:
    """A Mermaid ``xychart-beta`` (no fence) of the metric per iteration and best so far; ``None``: no metric."""
    series = metric_series(history)
    if not series:
        return None
    chosen = thin([(n, v) for n, v, _ in series], max_points)
    best_at = {n: b for n, _, b in series}
    values = [value for _, value in chosen]
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
