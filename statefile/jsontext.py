"""JSON that other programs wrote (the scheduler's autoloop.json, gh-aw's agent output, an export), read strictly.

Python's ``json`` accepts ``NaN`` and ``Infinity``, turns ``1e999`` into an infinite float, converts integers of
thousands of digits (or fails past 4,300 with a ValueError that is not a JSONDecodeError) and recurses once per
bracket.  None of that belongs in the files statefile reads, and each used to surface as an internal error or as
an impossible number deep inside a command.  :func:`parse_json` refuses all of it with one :class:`JsonError`
whose text is one line, for the caller to put in front of its own advice.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: Digits a number in these files may have: more than any count, id or metric anyone writes (2**128 has 39).
MAX_DIGITS = 40


class JsonError(ValueError):
    """Why a text is not the strict JSON statefile reads, in one line (no file name: the caller adds that).

    ``too_deep``: the text may well be JSON, but nested deeper than Python's parser goes.
    """

    def __init__(self, message: str, *, too_deep: bool = False) -> None:
        super().__init__(message)
        self.too_deep = too_deep


def parse_json(
    text: str, *, max_digits: int = MAX_DIGITS, nan_as_null: bool = False, big_numbers_as_text: bool = False
) -> Any:
    """``text`` parsed as standard JSON: no NaN or Infinity, no number past ``max_digits`` digits or out of the
    float range, no nesting deeper than Python's recursion allows.  Raises :class:`JsonError`.

    ``nan_as_null`` reads ``NaN`` and ``Infinity`` as ``null`` instead: Python's ``json.dumps`` writes them, so a
    file another Python program wrote (the scheduler's autoloop.json) may hold one where a number is unknown.
    ``big_numbers_as_text`` keeps a number past those limits as its literal text (a ``str``) instead of refusing
    the whole text: in an agent's output, one absurd number is that item's problem, for the item's own checks.
    """

    def number(literal: str) -> bool:
        digits = sum(ch.isdigit() for ch in literal)
        if digits > max_digits:
            if big_numbers_as_text:
                return False
            raise JsonError(f"a number has {digits:,} digits, more than the {max_digits} statefile reads")
        return True

    def parse_int(literal: str) -> int | str:
        return int(literal) if number(literal) else literal

    def parse_float(literal: str) -> float | str:
        if not number(literal):
            return literal
        value = float(literal)
        if not math.isfinite(value):
            if big_numbers_as_text:
                return literal
            raise JsonError(f"the number {literal[:40]} is out of range")
        return value

    def parse_constant(name: str) -> None:
        if not nan_as_null:
            raise JsonError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise JsonError(f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise JsonError("it is nested thousands of levels deep", too_deep=True) from None
