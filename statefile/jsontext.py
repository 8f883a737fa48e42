"""JSON that other programs wrote (autoloop.json, gh-aw's agent output, an export), read strictly: no ``NaN`` or
``Infinity``, no number of thousands of digits or beyond the float range, no nesting past the recursion limit;
:func:`parse_json` refuses each with one :class:`JsonError` of one line."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

#: Digits a number in these files may have: more than any count, id or metric anyone writes (2**128 has 39).
MAX_DIGITS = 40


class JsonError(ValueError):
    """Why a text is not the strict JSON statefile reads, in one line; ``too_deep``: nested past Python's parser."""

    def __init__(self, message: str, *, too_deep: bool = False) -> None:
        super().__init__(message)
        self.too_deep = too_deep


def parse_json(
    text: str, *, max_digits: int = MAX_DIGITS, nan_as_null: bool = False, big_numbers_as_text: bool = False
) -> Any:
    """``text`` parsed as strict JSON, or :class:`JsonError`; ``nan_as_null``: ``NaN`` as ``null`` (as Python writes
    it); ``big_numbers_as_text``: a number past the limits as its text, for the item that holds it to refuse."""

    def number(literal: str, convert: Callable[[str], float]) -> Any:
        digits = sum(ch.isdigit() for ch in literal)
        value = convert(literal) if digits <= max_digits else None
        if value is not None and math.isfinite(value):
            return value
        if big_numbers_as_text:
            return literal
        if value is None:
            raise JsonError(f"a number has {digits:,} digits, more than the {max_digits} statefile reads")
        raise JsonError(f"the number {literal[:40]} is out of range")

    def parse_constant(name: str) -> None:
        if not nan_as_null:
            raise JsonError(f"{name} is not a JSON number")

    try:
        return json.loads(
            text,
            parse_int=lambda s: number(s, int),
            parse_float=lambda s: number(s, float),
            parse_constant=parse_constant,
        )
    except json.JSONDecodeError as exc:
        raise JsonError(f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise JsonError("it is nested thousands of levels deep", too_deep=True) from None
