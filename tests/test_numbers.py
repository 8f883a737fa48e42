"""statefile.numbers: the one style of numbers in human output (issue 22), at its edges."""

from __future__ import annotations

import pytest

from statefile.numbers import budget_text, number_text, percent, percent_text, plural, size_text


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (30_720, "30,720"),
        (10**9, "1,000,000,000"),
        (-1234, "-1,234"),
        pytest.param(10**30 - 1, f"{10**30 - 1:,}", id="30-digits"),
        pytest.param(10**30, "a number of more than 30 digits", id="31-digits"),
        # past Python's int-to-text limit (4,300 digits): no ValueError
        pytest.param(10**5000, "a number of more than 30 digits", id="5001-digits"),
    ],
)
def test_number_text_separates_thousands(number: int, text: str) -> None:
    assert number_text(number) == text


def test_sizes_and_counts_agree_with_their_nouns() -> None:
    assert size_text(0) == "0 bytes"
    assert size_text(1) == "1 byte"
    assert size_text(999) == "999 bytes"
    assert size_text(1000) == "1,000 bytes"
    assert size_text(10**9) == "1,000,000,000 bytes"
    assert plural(1, "entry", "entries") == "1 entry"
    assert plural(1000, "entry", "entries") == "1,000 entries"


@pytest.mark.parametrize(
    ("part", "whole", "value", "text"),
    [
        (0, 30_720, 0.0, "0.0%"),
        (1, 10**9, 0.1, "0.1%"),  # a non-empty file never reads 0.0%
        (999, 1000, 99.9, "99.9%"),
        (9995, 10_000, 99.9, "99.9%"),  # 99.95 %: under the budget never reads 100.0%
        (1000, 1000, 100.0, "100.0%"),
        (10_001, 10_000, 100.1, "100.1%"),  # 100.01 %: over the budget never reads 100.0%
        (2585, 1000, 258.5, "258.5%"),  # never 258% (nor 258.4% from a float error)
        (79_399, 30_720, 258.5, "258.5%"),
        (1582, 30_720, 5.1, "5.1%"),
        (3269, 30_720, 10.6, "10.6%"),
        (125, 1000, 12.5, "12.5%"),  # halves round up
        (10**9, 1000, 100_000_000.0, "100,000,000.0%"),
    ],
)
def test_percent_has_one_decimal_and_never_crosses_a_line(part: int, whole: int, value: float, text: str) -> None:
    assert percent(part, whole) == value
    assert percent_text(value) == text


def test_percent_without_a_budget_is_none() -> None:
    assert percent(5, 0) is None
    assert budget_text(3840, 0) == "3,840 bytes"


@pytest.mark.parametrize(
    ("size", "budget", "text"),
    [
        (0, 30_720, "0 of 30,720 bytes (0.0%)"),
        (3840, 30_720, "3,840 of 30,720 bytes (12.5%)"),
        (999, 1000, "999 of 1,000 bytes (99.9%)"),
        (1000, 1000, "1,000 of 1,000 bytes (100.0%)"),
        (79_399, 30_720, "79,399 of 30,720 bytes (258.5%)"),
        (10**9, 10**9, "1,000,000,000 of 1,000,000,000 bytes (100.0%)"),
    ],
)
def test_budget_text(size: int, budget: int, text: str) -> None:
    assert budget_text(size, budget) == text
