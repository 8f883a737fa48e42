"""Helpers shared by the command modules: the app context, output in text or JSON, file-or-program arguments."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from statefile.app.context import AppContext

F = TypeVar("F", bound=Callable[..., Any])

pass_app = click.make_pass_decorator(AppContext, ensure=True)


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept readable)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def say(app: AppContext, message: str = "") -> None:
    """Print a human-readable line unless ``--quiet``."""
    if not app.quiet:
        click.echo(message)


def warn(message: str) -> None:
    """Print a warning line on stderr."""
    click.echo(f"statefile: warning: {message}", err=True)


def is_file_argument(arg: str) -> bool:
    """Whether a command argument names a file rather than a program (it has a path separator or ends in .md)."""
    return arg.endswith(".md") or "/" in arg or os.sep in arg


def file_program(path: Path) -> tuple[Path, str]:
    """The folder and program name for a state file path (``memory/perf.md`` → ``memory``, ``perf``)."""
    return path.parent if str(path.parent) else Path("."), path.stem


@contextmanager
def progress(app: AppContext, items: list[str], label: str) -> Iterator[Iterable[str]]:
    """Iterate ``items`` with a progress bar on stderr when there are many and stderr is a terminal."""
    if app.quiet or app.as_json or len(items) < 20 or not sys.stderr.isatty():
        yield items
        return
    with click.progressbar(items, label=label, file=sys.stderr) as bar:
        yield bar


def example(text: str) -> Callable[[F], F]:
    """Append an "Example" block to a command's help text."""

    def decorate(fn: F) -> F:
        doc = (fn.__doc__ or "").rstrip()
        fn.__doc__ = f"{doc}\n\n\b\nExample:\n  {text}\n"
        return fn

    return decorate
