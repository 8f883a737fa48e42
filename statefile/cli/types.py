"""Click parameter types shared by the global options and the commands (click and the base layer only: the group
imports this on every start-up, ``statefile --version`` included)."""

from __future__ import annotations

from typing import Any

import click

from statefile.defaults import MAX_GITHUB_NUMBER, parse_size


class SizeType(click.ParamType[int]):
    """A byte size typed the way the configuration accepts it: ``30720``, ``30KB``, ``1.5MiB``.

    One parser (:func:`statefile.defaults.parse_size`) for flags, environment variables and TOML, so a size that
    works in ``.statefile.toml`` works on the command line too.
    """

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The size in bytes, or a usage error naming the option."""
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


#: The click type of every ``--max-bytes``.
SIZE = SizeType()


class GithubNumberType(click.ParamType[int]):
    """An issue or pull request number (``--pr``, ``--issue``): 1 to 2,147,483,647, what GitHub's numbers can be
    (:data:`statefile.defaults.MAX_GITHUB_NUMBER`)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """The number, or a usage error naming the option."""
        text = str(value).strip()
        # Digits only, and int() only of as many as the bound has: of thousands of digits Python refuses it.
        if not text.isascii() or not text.isdigit():
            self.fail(f"{value!r} is not a positive whole number such as 12", param, ctx)
        number = int(text) if len(text) <= len(str(MAX_GITHUB_NUMBER)) else MAX_GITHUB_NUMBER + 1
        if not 1 <= number <= MAX_GITHUB_NUMBER:
            self.fail(
                f"{text if len(text) <= 40 else text[:20] + '…'} is not an issue or pull request number: GitHub's "
                f"go from 1 to {MAX_GITHUB_NUMBER:,}",
                param,
                ctx,
            )
        return number


#: The click type of every ``--pr`` and ``--issue``.
GITHUB_NUMBER = GithubNumberType()


class WholeNumberType(click.IntRange):
    """A count or a number such as ``-n 5`` or an iteration, at least ``min``: anything else is one line that says
    so in words (click's own says "not a valid integer range" of ``abc``)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The number, or a usage error naming the option and what it takes."""
        if isinstance(value, int) and not isinstance(value, bool):
            return super().convert(value, param, ctx)
        text = str(value).strip()
        shown = text if len(text) <= 40 else text[:20] + "…"
        example = max(self.min or 0, 5)
        if not text.isascii() or not text.removeprefix("-").isdigit():
            self.fail(f"{shown!r} is not a whole number; give one such as {example}", param, ctx)
        # Few enough digits for int() (of thousands Python refuses it); a long number is still a number, which the
        # command's own check then calls too large in words (an iteration "beyond 10,000,000").
        if len(text) > 100:
            self.fail(
                f"{shown!r} has {len(text):,} digits, far beyond any count; give one such as {example}", param, ctx
            )
        return super().convert(int(text), param, ctx)


def whole_number(minimum: int) -> WholeNumberType:
    """The click type of a whole-number option or argument that must be at least ``minimum``."""
    return WholeNumberType(min=minimum)
