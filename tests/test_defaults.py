"""Defaults every layer agrees on (statefile.defaults): byte sizes as ``parse_size`` reads them."""

from __future__ import annotations

import pytest

from statefile.defaults import parse_size


@pytest.mark.parametrize(
    ("raw", "size"),
    [
        (30720, 30720),
        ("30720", 30720),
        ("30KB", 30720),
        ("30 kb", 30720),
        ("30K", 30720),
        ("1.5MiB", 1572864),
        ("1M", 1048576),
        ("100b", 100),
        (" 7 ", 7),
    ],
)
def test_sizes(raw: object, size: int) -> None:
    assert parse_size(raw) == size


@pytest.mark.parametrize("raw", ["lots", "30 XB", "", 0, -5, "0KB", True, 3.5, None, "KB"])
def test_bad_sizes(raw: object) -> None:
    with pytest.raises(ValueError, match="must be"):
        parse_size(raw)


@pytest.mark.parametrize(
    ("raw", "size"),
    [("1G", 1024**3), ("1073741823.9999999999", 1073741823), ("0.5K", 512), ("0" * 400 + "7", 7), ("2.50KB", 2560)],
)
def test_sizes_are_parsed_exactly(raw: str, size: int) -> None:
    """Issue 15: sizes went through float(): 309 nines became infinity (exit 70), and .9999999999 rounded up."""
    assert parse_size(raw) == size


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("9" * 309, "at most 1,073,741,824 bytes (1 GiB), got a number of 309 digits"),
        ("9" * 307 + "KB", "got a number of 307 digits"),
        ("1073741825", "got 1,073,741,825 bytes"),
        ("1.5G", "got 1,610,612,736 bytes"),
        (10**5000, "got a number of more than 30 digits"),
        ("1." + "0" * 5000 + "1", "at most 12 digits after the point"),
    ],
    ids=["309-digits", "307-digits-KB", "just-over", "1.5G", "huge-int", "long-fraction"],
)
def test_absurd_sizes_are_a_clear_value_error(raw: object, needle: str) -> None:
    with pytest.raises(ValueError, match="must ") as info:
        parse_size(raw)
    assert needle in str(info.value)
