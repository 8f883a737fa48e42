"""Click parameter types of the global options and the commands (light: every start-up imports this)."""

from __future__ import annotations

from typing import Any

import click

from statefile.defaults import MAX_GITHUB_NUMBER, parse_size


class SizeType(click.ParamType[int]):
    """A byte size as the configuration takes it (``30720``, ``30KB``, ``1.5MiB``: :func:`defaults.parse_size`)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The size in bytes, or a usage error naming the option."""
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


#: The click type of every ``--max-bytes``.
SIZE = SizeType()


def _cut(text: str) -> str:
    return text if len(text) <= 40 else text[:20] + "…"


class WholeNumberType(click.IntRange):
    """A count or an iteration of at least ``min``, or an issue or pull request number (``max``: GitHub's largest),
    refused in words (click says "not a valid integer range" of ``abc``)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The number, or a usage error naming the option and what it takes."""
        text = str(value).strip()
        example = 12 if self.max else max(self.min or 0, 5)
        if not text.isascii() or not text.removeprefix("-").isdigit():
            self.fail(f"{_cut(text)!r} is not a whole number; give one such as {example}", param, ctx)
        if self.max is not None and (len(text) > len(str(self.max)) or not (self.min or 0) <= int(text) <= self.max):
            self.fail(f"{_cut(text)} is not an issue or pull request number: GitHub's go from 1 to {self.max:,}",
                      param, ctx)  # fmt: skip
        if len(text) > 100:  # too many digits for int(), which refuses thousands; the command's check says why
            self.fail(f"{_cut(text)!r} has {len(text):,} digits, far beyond any count; give one such as {example}",
                      param, ctx)  # fmt: skip
        return super().convert(int(text), param, ctx)


#: The click type of every ``--pr`` and ``--issue``.
GITHUB_NUMBER = WholeNumberType(min=1, max=MAX_GITHUB_NUMBER)


def whole_number(minimum: int) -> WholeNumberType:
    """The click type of a whole-number option or argument that must be at least ``minimum``."""
    return WholeNumberType(min=minimum)
