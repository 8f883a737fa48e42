"""Helpers shared by the command modules: the app context, output in text or JSON, file-or-program arguments."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from statefile.app.context import AppContext
from statefile.errors import NotFoundError
from statefile.model.document import StateDocument

F = TypeVar("F", bound=Callable[..., Any])


def pass_app(command: F) -> F:
    """Give the command the run's :class:`AppContext`, built once from the global options.

    The options come from the root context (``statefile --json …``) and from the command's own copies of them
    (``statefile … --json``); by the time a command runs, click has parsed both.
    """

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        root = click.get_current_context().find_root()
        app = root.meta.get(_APP_KEY)
        if app is None:
            app = root.meta[_APP_KEY] = AppContext(**(root.obj or {}))
        return command(app, *args, **kwargs)

    return cast(F, run)


_APP_KEY = "statefile.app"


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept readable)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def say(app: AppContext, message: str = "") -> None:
    """Print a human-readable line unless ``--quiet``."""
    if not app.quiet:
        click.echo(message)


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


def require_program(app: AppContext, program: str) -> StateDocument:
    """The document of an existing ``program``; a missing one is a not-found error naming the fix."""
    doc = app.store().read(program)
    if doc is None:
        raise NotFoundError(f"no program '{program}'; 'statefile list' shows the programs")
    return doc
