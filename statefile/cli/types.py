"""Click parameter types shared by the global options and the commands (click and the base layer only: the group
imports this on every start-up, ``statefile --version`` included)."""

from __future__ import annotations

from typing import Any

import click

from statefile.defaults import parse_size


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
