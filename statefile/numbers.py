"""How statefile writes numbers for people: the one place every human (non-JSON) output takes them from (issue 22):
counts with thousands separators, a share of a budget with one decimal, rounded half up as ``--json`` carries it,
never crossing a line that means something (under budget is never ``100.0%``, a non-empty file never ``0.0%``)."""

from __future__ import annotations

#: Past this many digits a number is "a number of more than 30 digits" (a typo; Python refuses past 4,300).
HUGE_DIGITS = 30


def number_text(number: int) -> str:
    """A count or a size as a message shows it: ``0``, ``999``, ``1,000``, ``1,000,000,000``."""
    return f"{number:,}" if abs(number) < 10**HUGE_DIGITS else f"a number of more than {HUGE_DIGITS} digits"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun`` agreeing in number: ``1 iteration``, ``1,024 bytes``; ``many`` is an irregular plural."""
    return f"{number_text(count)} {noun if count == 1 else (many or noun + 's')}"


def size_text(size: int) -> str:
    """A size in bytes: ``1 byte``, ``3,840 bytes``."""
    return plural(size, "byte")


def percent(part: int, whole: int) -> float | None:
    """``part`` as a percentage of ``whole`` with one decimal, rounded half up exactly, never on a line ``part`` is
    not on (below ``whole`` at most 99.9, above at least 100.1, positive at least 0.1); ``None`` without a whole."""
    if whole <= 0:
        return None
    tenths = (2000 * part + whole) // (2 * whole)  # round(1000 * part / whole), halves up, in integers
    if part < whole:
        tenths = min(tenths, 999)
    elif part > whole:
        tenths = max(tenths, 1001)
    return max(tenths, 1) / 10 if part > 0 else tenths / 10


def percent_text(value: float) -> str:
    """A percentage (as :func:`percent` gives it) with one decimal: ``0.0%``, ``5.1%``, ``100.0%``, ``1,234.5%``."""
    return f"{value:,.1f}%"


def budget_text(size: int, max_bytes: int) -> str:
    """A size against its budget: ``3,840 of 30,720 bytes (12.5%)``; just the size when there is no budget."""
    if (share := percent(size, max_bytes)) is None:
        return size_text(size)
    return f"{number_text(size)} of {size_text(max_bytes)} ({percent_text(share)})"
