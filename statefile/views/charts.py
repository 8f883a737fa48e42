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
from decimal import Decimal

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


def metric_sparkline(history: ProgramHistory, width: int = 24) -> str:
    """The sparkline of ``history``'s metric over iterations (``""`` when no iteration has a numeric metric)."""
    return sparkline([value for _, value in history.points()], width)


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


def _quoted(text: str) -> str:
    # A quoted string in the grammar runs to the next double quote; nothing can escape one.
    return '"' + text.replace('"', "'").replace("\n", " ") + '"'


def mermaid_xychart(history: ProgramHistory, *, max_points: int = MAX_CHART_POINTS) -> str | None:
    """A Mermaid ``xychart-beta`` of ``history``'s metric per iteration and best so far (``None``: no metric).

    The text is the diagram only (no code fence); :mod:`statefile.views.summary` wraps it in a ```` ```mermaid ````
    block.
    """
    points = history.points()
    if not points:
        return None
    best_at = dict(history.best_points())
    chosen = thin(points, max_points)
    values = [value for _, value in chosen]
    # Before the first accepted metric there is no best yet; the line starts flat at the first best there is.
    first_best = next((best_at[n] for n, _ in chosen if n in best_at), None)
    best: list[float] = []
    for n, _ in chosen:
        if n in best_at:
            best.append(best_at[n])
        elif best:
            best.append(best[-1])
        elif first_best is not None:
            best.append(first_best)
    low = min(values + best)
    high = max(values + best)
    pad = (high - low) * 0.05 or abs(high) * 0.05 or 1.0
    lines = [
        "xychart-beta",
        f"    title {_quoted(f'{history.program}: metric per iteration ({history.direction} is better)')}",
        f"    x-axis {_quoted('iteration')} [{', '.join(str(n) for n, _ in chosen)}]",
        f"    y-axis {_quoted('metric')} {number_text(low - pad)} --> {number_text(high + pad)}",
        f"    line [{', '.join(number_text(v) for v in values)}]",
    ]
    if len(best) == len(values):
        lines.append(f"    line [{', '.join(number_text(v) for v in best)}]")
    return "\n".join(lines) + "\n"
