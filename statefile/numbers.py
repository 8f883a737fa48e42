"""How statefile writes numbers for people: the one place every human (non-JSON) output takes them from.

One style everywhere (issue 22):

- sizes and counts always with thousands separators: ``3,840 bytes``, ``3,840 of 30,720 bytes``, ``1,024 tokens``;
- a share of a budget always with one decimal, rounded half up: ``5.1%``, ``47.7%``, ``258.5%``, ``100.0%``.  One
  decimal because that is what ``--json`` carries (``percent_of_budget``, from :func:`percent` too), so text and
  JSON never disagree; and because a whole percent hides what matters at the edge (``100%`` for a file 0.4 % over
  its budget, ``258%`` for 258.5 %).  The rounding never crosses a line that means something: a file under its
  budget never shows ``100.0%`` (99.95 % is ``99.9%``), a file over it never shows ``100.0%`` either (``100.1%``),
  and a non-empty file never shows ``0.0%``;
- a size against its budget reads ``3,840 of 30,720 bytes (12.5%)`` (:func:`budget_text`), in every command and in
  the commit messages statefile writes.

Numbers that name something rather than measure it stay as typed, because they are typed back: iteration and
line numbers (``statefile expand perf 1234``), issue numbers, metric values as the agent reported them, settings
(``max-bytes 30720``) and ``key=value`` echoes of a JSON file.
"""

from __future__ import annotations

HUGE_DIGITS = 30
"""Past this many digits a number is shown as "a number of more than 30 digits" (past 4,300 digits Python refuses
to turn an int into text at all, a ValueError of its own)."""


def number_text(number: int) -> str:
    """A count or a size as a message shows it: ``0``, ``999``, ``1,000``, ``1,000,000,000``; a number of more than
    :data:`HUGE_DIGITS` digits (a typo, never a measurement) as "a number of more than 30 digits"."""
    return f"{number:,}" if abs(number) < 10**HUGE_DIGITS else f"a number of more than {HUGE_DIGITS} digits"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun`` agreeing in number: ``1 iteration``, ``2 iterations``, ``1,024 bytes``, ``0 parts``.

    ``many`` is the plural when it is not ``noun + "s"`` (``plural(2, "entry", "entries")``).
    """
    return f"{number_text(count)} {noun if count == 1 else (many or noun + 's')}"


def size_text(size: int) -> str:
    """A size in bytes: ``1 byte``, ``3,840 bytes``."""
    return plural(size, "byte")


def percent(part: int, whole: int) -> float | None:
    """``part`` as a percentage of ``whole`` with one decimal (``None`` when ``whole`` is not positive).

    Rounded half up on the exact fraction (no float error: 2,585 of 1,000 is 258.5, never 258.4), except that the
    result never lands on a line ``part`` is not on: below ``whole`` it stays at most 99.9, above it at least 100.1,
    and a positive ``part`` is at least 0.1.  What ``--json`` reports as ``percent_of_budget``.
    """
    if whole <= 0:
        return None
    tenths = (2000 * part + whole) // (2 * whole)  # round(1000 * part / whole), halves up, in integers
    if part < whole:
        tenths = min(tenths, 999)
    elif part > whole:
        tenths = max(tenths, 1001)
    if part > 0:
        tenths = max(tenths, 1)
    return tenths / 10


def percent_text(value: float) -> str:
    """A percentage (as :func:`percent` gives it) with one decimal: ``0.0%``, ``5.1%``, ``100.0%``, ``1,234.5%``."""
    return f"{value:,.1f}%"


def budget_text(size: int, max_bytes: int) -> str:
    """A size against its budget: ``3,840 of 30,720 bytes (12.5%)``; just the size when there is no budget."""
    share = percent(size, max_bytes)
    if share is None:
        return size_text(size)
    return f"{number_text(size)} of {size_text(max_bytes)} ({percent_text(share)})"


__all__ = ["budget_text", "number_text", "percent", "percent_text", "plural", "size_text"]
