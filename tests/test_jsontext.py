"""JSON other programs wrote, read strictly (statefile.jsontext): no ``NaN`` or ``Infinity``, no number of more digits
than the limit or beyond the float range, no nesting past the recursion limit, each refused with one
:class:`JsonError` of one line; the options that let a caller read ``NaN`` as ``null`` or keep a big number as text."""

from __future__ import annotations

from typing import Any

import pytest

from statefile.jsontext import MAX_DIGITS, JsonError, parse_json


def refused(text: str, **options: Any) -> JsonError:
    """The JsonError ``parse_json`` raises for ``text``, checked to be one line."""
    with pytest.raises(JsonError) as raised:
        parse_json(text, **options)
    message = str(raised.value)
    assert message and "\n" not in message, message
    return raised.value


def test_strict_json_reads_as_json() -> None:
    value = parse_json('{"n": 3, "x": 2.5, "s": "é", "l": [null, true, false], "big": -' + "9" * MAX_DIGITS + "}")
    assert value == {"n": 3, "x": 2.5, "s": "é", "l": [None, True, False], "big": -int("9" * MAX_DIGITS)}
    assert type(value["n"]) is int and type(value["x"]) is float


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", '{"metric": NaN}', "[1, Infinity]"])
def test_nan_and_infinity_are_refused(text: str) -> None:
    error = refused(text)
    assert "is not a JSON number" in str(error) and not error.too_deep


def test_nan_as_null_reads_nan_as_python_writes_it() -> None:
    assert parse_json('{"metric": NaN, "n": 1}', nan_as_null=True) == {"metric": None, "n": 1}


@pytest.mark.parametrize(
    "literal",
    ["1" * (MAX_DIGITS + 1), "-" + "1" * (MAX_DIGITS + 1), "0." + "0" * MAX_DIGITS + "1", "9" * 5000],
    ids=["int", "negative", "float", "thousands"],
)
def test_a_number_of_more_digits_than_the_limit_is_refused(literal: str) -> None:
    """Thousands of digits would meet Python's own limit on int() (a ValueError of another wording) or take long."""
    digits = sum(ch.isdigit() for ch in literal)
    assert f"a number has {digits:,} digits, more than the {MAX_DIGITS} statefile reads" in str(refused(literal))
    assert len(str(refused(f"[{literal}]"))) < 100  # the count, not the digits themselves


def test_the_digit_limit_is_the_callers() -> None:
    assert parse_json("1" * 18, max_digits=18) == int("1" * 18)
    assert "more than the 18 statefile reads" in str(refused("1" * 19, max_digits=18))


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1.5E+309"])
def test_a_number_beyond_the_float_range_is_refused(literal: str) -> None:
    assert str(refused(literal)) == f"the number {literal} is out of range"


def test_big_numbers_as_text_keeps_them_for_the_item_to_refuse() -> None:
    too_long = "1" * (MAX_DIGITS + 1)
    text = f'{{"metric": 1e400, "count": {too_long}, "ok": 7}}'
    assert parse_json(text, big_numbers_as_text=True) == {"metric": "1e400", "count": too_long, "ok": 7}
    refused('{"metric": NaN}', big_numbers_as_text=True)  # NaN is still no number


def test_nesting_past_the_recursion_limit_is_refused_as_too_deep() -> None:
    depth = 100_000
    error = refused("[" * depth + "]" * depth)
    assert error.too_deep and "nested" in str(error)
    value = parse_json("[" * 50 + "]" * 50)  # ordinary nesting reads
    for _ in range(49):
        (value,) = value
    assert value == []


@pytest.mark.parametrize(
    ("text", "where"),
    [("", "line 1, column 1"), ("[1] x", "line 1, column 5"), ('{\n  "a": 1,\n}', "line 3, column 1")],
)
def test_malformed_json_says_where_in_one_line(text: str, where: str) -> None:
    error = refused(text)
    assert str(error).endswith(f" at {where}") and not error.too_deep
    assert error.__cause__ is None and error.__suppress_context__  # no json.JSONDecodeError chained behind it
