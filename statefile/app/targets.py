"""Which programs a command acts on: the names and state-file paths it was given, or ``--all``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from statefile.app.reading import is_path_argument as is_path_argument
from statefile.app.reading import missing_program, state_files, unreadable_files
from statefile.errors import InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.store import Store
from statefile.store.names import validate_program


@dataclass(frozen=True)
class Target:
    """A program in the store, or (``path`` set) a state file named by its path, read from disk."""

    program: str
    path: Path | None = None

    @property
    def label(self) -> str:
        """How output names it: the path for a file, else the program."""
        return self.program if self.path is None else str(self.path)


@dataclass(frozen=True)
class Targets:
    """What was found, and (what the user typed, why) for each name that could not be: one does not hide others."""

    found: tuple[Target, ...]
    failures: tuple[tuple[str, StatefileError], ...] = ()


def resolve_targets(
    store: Store,
    names: Sequence[str],
    *,
    all_programs: bool,
    allow_paths: bool = True,
    verb: str = "act on",
    globs: tuple[str, ...] = ("*.md",),
) -> Targets:
    """The programs ``names`` stand for (a path to a state file when ``allow_paths``, else an existing program),
    each once; or with ``all_programs`` every program matching ``globs``, sorted, the unreadable ones as failures.
    Both, or neither, is a usage error naming what to pass (``verb``: what the command does)."""
    if all_programs and names:
        raise UsageError("give program names or --all, not both")
    if not all_programs and not names:
        raise UsageError(f"name the programs to {verb}, or pass --all")
    if all_programs:
        broken = unreadable_files(store, globs)
        return Targets(
            tuple(Target(name) for name in sorted(state_files(store, globs))),
            tuple((name, InvalidDataError(why)) for name, why in sorted(broken.items())),
        )
    # State-file paths alone read no store (a caller may pass a stand-in for one outside any repository).
    known = store.programs() if not all(allow_paths and is_path_argument(name) for name in names) else {}
    found: dict[object, Target] = {}
    failures: list[tuple[str, StatefileError]] = []
    for name in names:
        try:
            target = _target(store, name, known, allow_paths)
        except StatefileError as exc:
            failures.append((name, exc))
            continue
        # The same file twice (``perf.md`` and ``./perf.md``) is one target; two folders' ``perf.md`` are two.
        found.setdefault(target.program if target.path is None else target.path.resolve(), target)
    return Targets(tuple(found.values()), tuple(failures))


def _target(store: Store, name: str, known: Mapping[str, int], allow_paths: bool) -> Target:
    """One name as a target, or the error that says why it is none."""
    if allow_paths and is_path_argument(name):
        path = Path(name)
        if not path.is_file():
            raise NotFoundError(f"{name}: no such file; check the path")
        return Target(path.stem, path)
    validate_program(name)
    # Not listed but there: the shared lessons, or a file that cannot be read (its read raises why).
    if name not in known and store.read_text(name) is None:
        raise missing_program(store, name)
    return Target(name)
