"""Sets of iteration numbers as sorted, merged, inclusive ``(first, last)`` spans, never one element per number:
one typo in a range line (``### Iters 2–1000000000000``) would otherwise fill the machine's memory."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import pairwise

Span = tuple[int, int]
"""An inclusive interval of iteration numbers, ``first <= last``."""


def merge(spans: Iterable[Span]) -> list[Span]:
    """``spans`` sorted, overlapping and adjacent ones joined: ``[(5, 7), (1, 2), (3, 3)]`` → ``[(1, 3), (5, 7)]``."""
    out: list[Span] = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def of_numbers(numbers: Iterable[int]) -> list[Span]:
    """The merged spans of single numbers: ``[3, 1, 2, 7]`` → ``[(1, 3), (7, 7)]``."""
    return merge((n, n) for n in numbers)


def size(spans: Iterable[Span]) -> int:
    """How many numbers merged ``spans`` hold."""
    return sum(last - first + 1 for first, last in spans)


def highest(spans: Iterable[Span]) -> int:
    """The highest number in ``spans`` (0 when there is none)."""
    return max((last for _, last in spans), default=0)


def missing(spans: Iterable[Span], upto: int) -> list[Span]:
    """The numbers from 1 to ``upto`` that no span holds, as spans."""
    bounds = [(0, 0), *merge(span for span in spans if span[0] <= upto), (upto + 1, upto + 1)]
    return [(a + 1, b - 1) for (_, a), (b, _) in pairwise(bounds) if a + 1 <= b - 1]


def inside(merged: Sequence[Span], number: int) -> bool:
    """Whether ``number`` is in ``merged`` (sorted, disjoint spans, as :func:`merge` returns), by bisection."""
    at = bisect_right(merged, (number, math.inf)) - 1
    return at >= 0 and merged[at][0] <= number <= merged[at][1]


def holds(outer: Iterable[Span], inner: Iterable[Span]) -> bool:
    """Whether every number of ``inner`` is in ``outer``."""
    merged = merge(outer)
    return merge([*merged, *inner]) == merged  # merging keeps the set of numbers: equal iff nothing was added


def spans_text(spans: Iterable[Span], *, mark: str = "", limit: int = 10) -> str:
    """``"1–3, 7, 9–12"`` (each number preceded by ``mark``), the first ``limit`` spans then ``", …"``."""
    merged = merge(spans)
    text = ", ".join(f"{mark}{a}" if a == b else f"{mark}{a}–{b}" for a, b in merged[:limit])
    return text + (", …" if len(merged) > limit else "")
