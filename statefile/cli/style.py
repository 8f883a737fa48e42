"""Colour for people, never for programs: only on a terminal, never with ``NO_COLOR`` (https://no-color.org) or
``TERM=dumb``.  Light on purpose (click and the standard library): the error path of every command uses it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import IO

import click


def colour_enabled(stream: IO[str] | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether to colour output on ``stream`` (default stdout): only a terminal, never with ``NO_COLOR`` set.

    https://no-color.org: any non-empty ``NO_COLOR`` turns colour off; ``TERM=dumb`` does too.
    """
    environment = os.environ if env is None else env
    if environment.get("NO_COLOR") or environment.get("TERM") == "dumb":
        return False
    target = stream if stream is not None else sys.stdout
    try:
        return bool(target.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def paint(text: str, *, fg: str | None = None, bold: bool = False, err: bool = False) -> str:
    """``text`` styled for a terminal when colour is on for stdout (``err``: stderr), else unchanged."""
    if not colour_enabled(sys.stderr if err else sys.stdout):
        return text
    return click.style(text, fg=fg, bold=bold)
