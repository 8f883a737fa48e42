"""The store interface (:class:`Store`) and the pure part of every write; it imports neither store (no cycle)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from statefile.errors import BudgetError, InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.model.archive import LAYOUT_KINDS, NESTED, ArchiveLayout, make_chunk, part_number, plan_append
from statefile.model.document import StateDocument, parse
from statefile.model.text import encode
from statefile.numbers import budget_text
from statefile.store.names import (
    PROGRAM_RE,
    case_twins,
    is_program_name,
    validate_part,
    validate_path,
    validate_program,
    windows_reserved,
)

if TYPE_CHECKING:  # a default (PEP 696) for type checkers only: a bare ``Change`` means ``Change[None]``
    from typing_extensions import TypeVar as TypeVarWithDefault

    from statefile.store.git.store import GitStore

    T = TypeVarWithDefault("T", default=None)
else:
    T = TypeVar("T")


@dataclass(frozen=True)
class Change(Generic[T]):
    """An update function's result: ``archive`` is removed text for the archive, ``archive_label`` its heading."""

    document: StateDocument
    archive: str = ""
    archive_label: str = ""
    #: The commit message for this write when the update function knows better than its caller; "" keeps update()'s.
    message: str = ""
    #: What the caller wants back from the call that landed (:attr:`UpdateResult.detail`); the store never looks.
    detail: T | None = None


@dataclass(frozen=True)
class UpdateResult(Generic[T]):
    """What :meth:`Store.update` (or :meth:`Store.write_files`) did, all from the call that landed."""

    commit: str | None  # the branch tip afterwards (``None`` for a folder store, and for an empty branch left empty).
    landed: bool  # whether this call wrote anything (``False``: the result equalled what is stored).
    #: The store paths written, in the order written (archive parts first, the state file last).
    files: tuple[str, ...] = ()
    #: The program's document as stored afterwards (``None`` for :meth:`Store.write_files`).
    document: StateDocument | None = None
    detail: T | None = None  # :attr:`Change.detail` of the call that landed.
    attempts: int = 1  # how many times the write was tried (1 unless a concurrent writer got in first).


@dataclass(frozen=True)
class LogEntry:
    """One commit that touched a program's state file."""

    commit: str
    when: datetime
    author: str
    message: str


UpdateFn = Callable[[StateDocument | None], StateDocument | Change[T]]


class Store(abc.ABC):
    """A place holding ``{program}.md`` state files, their archives and shared files."""

    max_bytes: int
    #: ``Store.open(path, branch, remote, *, max_bytes, author, max_tries, max_wait)``: the git store at (or above)
    #: ``path`` on ``branch``; with ``remote`` (a name or a URL) every write fetches, commits and pushes (never forced),
    #: retrying up to ``max_tries`` times and ``max_wait`` s.  Set by :mod:`.git.store`, which this package loads.
    open: ClassVar[type[GitStore]]
    where: str = ""  # how messages say where a file is: "on branch memory/autoloop", "in /tmp/memory".

    # -- what a store provides: its revision, files and listings at a revision -----------------------------------

    def _head(self) -> str | None:
        """The revision reads see (a git store's tip; a folder has only the one it holds: ``None``)."""
        return None

    @abc.abstractmethod
    def _read_at(self, at: str | None, path: str) -> str | None:
        """The text of the file at ``path`` at revision ``at``, ``None`` when there is none."""

    @abc.abstractmethod
    def _names(self, at: str | None, program: str = "") -> list[str]:
        """The top-level names at ``at`` (for case twins), or with ``program`` its archive part names."""

    @abc.abstractmethod
    def _top_md(self) -> dict[str, tuple[int, str]]:
        """Every top-level ``{name}.md`` entry: name → (size, why it cannot be read, "" when it can)."""

    def read(self, program: str) -> StateDocument | None:
        """The parsed state file of ``program``, or ``None`` when it does not exist."""
        return None if (text := self.read_text(program)) is None else parse(text)

    def read_text(self, program: str) -> str | None:
        """The raw text of ``{program}.md`` or ``None``; InvalidDataError if it is not UTF-8 or not a file."""
        return self._read_at(self._head(), state_path(program))

    def read_texts(
        self, programs: Iterable[str], *, errors: dict[str, StatefileError] | None = None
    ) -> dict[str, str | None]:
        """:meth:`read_text` of many programs at one revision; with ``errors``, a failed read is stored there."""
        at, names, texts = self._head(), list(programs), {}
        known = self._read_together(at, names)
        for name in names:
            try:
                texts[name] = known[name] if name in known else self._read_at(at, state_path(name))
            except StatefileError as exc:
                if errors is None:
                    raise
                errors[name] = exc
        return texts

    def _read_together(self, at: str | None, programs: list[str]) -> dict[str, str]:
        """Texts read faster together (one git batch); the rest, and any that fail, are read alone for their errors."""
        return {}

    def programs(self) -> dict[str, int]:
        """Every top-level ``*.md`` state file: program name (without ``.md``) → size in bytes."""
        return {name: size for name, (size, why) in sorted(self._top_md().items()) if not why and is_program_name(name)}

    def unreadable(self) -> dict[str, str]:
        """Top-level ``{name}.md`` entries that look like programs but cannot be read: name → why (one line)."""
        found: dict[str, str] = {}
        for name, (_, why) in sorted(self._top_md().items()):
            # Refused only as a Windows device name (con, NUL): worth reporting; "aux.old notes" is no program at all.
            if windows_reserved(name) and PROGRAM_RE.fullmatch(name):
                found[name] = why or f"{name}.md {self.where}: {name!r} is a reserved device name on Windows; rename it"
            elif why and is_program_name(name):
                found[name] = why
        return found

    def archive_hint(self, program: str) -> str:
        """Where a person finds ``program``'s archive parts here (``archive/perf/``, ``_archive.perf.*.md``)."""
        return self._layout(program).hint(program)

    def archive_path(self, program: str, part: str) -> str:
        """The path of archive part ``part`` (``0001.md``) of ``program`` in this store, as a person finds it."""
        return self._layout(program).part_path(program, part)

    def _layout(self, program: str) -> ArchiveLayout:
        return NESTED

    def archive_parts(self, program: str) -> list[str]:
        """The archive part file names of ``program``, oldest first (``["0001.md", …]``)."""
        return sorted_parts(self._names(self._head(), validate_program(program)))

    def archive_part_paths(self, program: str) -> list[str]:
        """Paths of ``program``'s archive parts in every layout, oldest first; the store's own layout last."""
        # The store's own layout through archive_parts: it refuses what is no archive, as every write does.
        own = [self.archive_path(program, part) for part in self.archive_parts(program)]
        others = [ArchiveLayout(kind) for kind in LAYOUT_KINDS if kind != self._layout(program).kind]
        found = []
        for path in self.paths():
            folder, _, name = path.rpartition("/")
            for rank, layout in enumerate(others):
                if folder == layout.folder(program) and (part := layout.part_name(program, name)) is not None:
                    found.append((rank, part_number(part) or 0, path))
        return [path for *_, path in sorted(found)] + own

    def read_path(self, path: str) -> str:
        """The text of the file at ``path`` (as :meth:`paths` lists it); NotFoundError when there is none."""
        if (text := self._read_at(self._head(), path)) is None:
            raise NotFoundError(f"{path} is not {self.where}")
        return text

    def read_archive(self, program: str, part: str) -> str:
        """The text of one archive part; NotFoundError when it does not exist."""
        path = self.archive_path(validate_program(program), validate_part(part))
        if (text := self._read_at(self._head(), path)) is None:
            raise NotFoundError(f"archive part {part} of {program} is not {self.where}; list them with archive_parts()")
        return text

    @abc.abstractmethod
    def read_all(self) -> dict[str, str]:
        """Every text file: path → text (non-UTF-8 skipped, but a ``.md`` one, a link or a submodule is refused)."""

    def _text(self, path: str, data: bytes) -> str | None:
        """``None`` for a binary file (none of ours); a ``.md`` file must be UTF-8."""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return decode_text(data, f"{path} {self.where}") if path.endswith(".md") else None

    @abc.abstractmethod
    def paths(self) -> list[str]:
        """Every file path in the store, sorted (what ``check`` looks at for names that differ only in case)."""

    def log(self, program: str, limit: int = 50) -> list[LogEntry]:
        """Commits that touched ``{program}.md``, newest first (empty for stores without history)."""
        state_path(program)
        return []

    def log_patches(self, program: str, limit: int = 50) -> dict[str, str]:
        """What each of those commits changed in ``{program}.md``: commit → unified diff (empty without history)."""
        return {}

    def log_texts(self, program: str, limit: int = 50) -> dict[str, tuple[str | None, str | None]]:
        """``{program}.md`` before and after each of those commits (``None``: no file); empty when unreadable."""
        return {}

    @abc.abstractmethod
    def update(self, program: str, fn: UpdateFn[T], message: str = "") -> UpdateResult[T]:
        """Store ``fn(document or None)`` for ``program`` atomically (``fn`` must be pure: it may run again); if it
        raises or is over ``max_bytes`` (BudgetError), nothing is written."""

    def _plan(self, program: str, at: str | None, fn: UpdateFn[T], message: str) -> tuple[dict[str, bytes], Change[T]]:
        """The pure part of :meth:`update` at revision ``at``: the files to write (archive parts first, empty when
        nothing changes) and the update function's :class:`Change`."""
        path = state_path(program)
        current = self._read_at(at, path)
        # PERF.md beside perf.md is one file on macOS and Windows: a checkout there would lose one of them.
        if current is None and (twins := case_twins([path], self._names(at))):
            twin = twins[0][1]
            raise UsageError(
                f"program {program!r} would sit beside {twin}, a name that differs only in case — a checkout on macOS "
                f"or Windows could hold only one of them; use {twin[:-3]!r} or another name"
            )
        result = fn(None if current is None else parse(current))
        if not isinstance(result, StateDocument | Change):
            raise TypeError(f"the update function returned {type(result).__name__}, not a StateDocument or Change")
        change: Change[T] = Change(result) if isinstance(result, StateDocument) else result
        text = change.document.render()
        data = checked_bytes(text, path)
        if len(data) > self.max_bytes:
            raise BudgetError(
                f"{program}.md would be over its budget at {budget_text(len(data), self.max_bytes)}; nothing was "
                f"written — run `statefile compact {program}` to fold old entries into the archive"
            )
        files: dict[str, bytes] = {}
        if change.archive:
            when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            chunk = make_chunk(change.archive, when=when, what=change.archive_label or first_line(message) or "update")
            newest = next(reversed(sorted_parts(self._names(at, program))), None)
            old = None if newest is None else self._read_at(at, self.archive_path(program, newest))
            last = None if newest is None or old is None else (newest, old)
            for name, content in plan_append(program, last, chunk, self.max_bytes):
                part_path = self.archive_path(program, name)
                files[part_path] = checked_bytes(content, part_path)
        if files or text != current:
            files[path] = data
        return files, change

    @abc.abstractmethod
    def write_files(self, files: Mapping[str, str | None], message: str) -> UpdateResult[None]:
        """Write several files in one atomic batch (one commit); a ``None`` value deletes that file."""

    def interrupted_write(self) -> str | None:
        """What a Ctrl-C now must say about this store's writes; ``None``: none can have landed."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook: only stores holding resources override it
        """Release resources (child processes of a git store); the store is unusable afterwards."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def state_path(program: str) -> str:
    """The path of ``program``'s state file; every way to it comes through here, so here the name is checked."""
    return f"{validate_program(program)}.md"


def sorted_parts(names: list[str]) -> list[str]:
    """Archive part names among ``names``, oldest (lowest number) first; other names are dropped."""
    numbered = sorted((number, name) for name in names if (number := part_number(name)) is not None)
    return [name for _, name in numbered]


def checked_bytes(text: str, path: str) -> bytes:
    """UTF-8 bytes of ``text``; InvalidDataError when lone surrogates (undecodable bytes read) make them invalid."""
    data = encode(text)
    if not text.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidDataError(
                f"{path}: the new text is not valid UTF-8 (byte {exc.start}); fix those bytes — nothing was written"
            ) from None
    return data


def decode_text(data: bytes, path: str) -> str:
    """Strict UTF-8 text of a stored file; InvalidDataError (never a rewrite) when it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(f"{path}: not valid UTF-8 (byte {exc.start}); re-save it as UTF-8, then retry") from None


def encoded_files(files: Mapping[str, str | None], max_bytes: int) -> dict[str, bytes | None]:
    """What :meth:`Store.write_files` writes: path → bytes (``None`` deletes), each valid and within ``max_bytes``."""
    changes: dict[str, bytes | None] = {}
    for path, content in files.items():
        data = None if content is None else checked_bytes(content, path)
        if validate_path(path) and data is not None and len(data) > max_bytes:
            raise BudgetError(
                f"{path} is over the budget at {budget_text(len(data), max_bytes)}; nothing was written — run "
                "`statefile compact` on it first"
            )
        changes[path] = data
    return changes


def first_line(message: str) -> str:
    """The subject line of a commit message (the default archive chunk label)."""
    return message.strip().splitlines()[0] if message.strip() else ""
