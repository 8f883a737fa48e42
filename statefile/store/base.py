"""The store interface (:class:`Store`) and the shared, pure part of every write (turning an update function's
result into files to write); the stores (a git branch, a plain folder) do the I/O.  It imports neither store, so
both can import it without a cycle.  See :mod:`statefile.store` for what an update function must promise.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from statefile.defaults import BOT_EMAIL as BOT_EMAIL
from statefile.defaults import BOT_NAME as BOT_NAME
from statefile.defaults import DEFAULT_BRANCH as DEFAULT_BRANCH
from statefile.defaults import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from statefile.errors import BudgetError, InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.model.archive import LAYOUT_KINDS, NESTED, ArchiveLayout, make_chunk, part_number, plan_append
from statefile.model.document import StateDocument, parse
from statefile.model.text import encode
from statefile.numbers import budget_text
from statefile.store.names import case_twins, validate_part, validate_path, validate_program

if TYPE_CHECKING:  # a default (PEP 696) for type checkers only: a bare ``Change`` means ``Change[None]``
    from typing_extensions import TypeVar as TypeVarWithDefault

    from statefile.store.git.store import GitStore

    T = TypeVarWithDefault("T", default=None)
else:
    T = TypeVar("T")


@dataclass(frozen=True)
class Change(Generic[T]):
    """What an update function may return instead of a bare :class:`StateDocument`: ``archive`` is removed text to
    append, verbatim, to the program's archive; ``archive_label`` names the operation in the chunk's heading."""

    document: StateDocument
    archive: str = ""
    archive_label: str = ""
    #: The commit message for this write, when the update function knows better than its caller (e.g. the
    #: iteration number a record got on the tip it actually ran on); "" keeps the message given to update().
    message: str = ""
    #: What the caller wants back from the call that landed (a compaction report, the iteration number the
    #: record got): returned as :attr:`UpdateResult.detail`; the store never looks at it.
    detail: T | None = None


@dataclass(frozen=True)
class UpdateResult(Generic[T]):
    """What :meth:`Store.update` (and :meth:`Store.write_files`) did; after a retry, all of it is from the call
    whose result landed."""

    #: The branch tip afterwards: the new commit, or the unchanged tip when nothing was written (``None`` for
    #: a folder store, which has no commits, and for an empty branch left empty).
    commit: str | None
    #: Whether this call wrote anything (``False``: the result equalled what is stored).
    landed: bool
    #: The store paths written, in the order written (archive parts first, the state file last).
    files: tuple[str, ...] = ()
    #: The program's document as stored afterwards (``None`` for :meth:`Store.write_files`).
    document: StateDocument | None = None
    #: :attr:`Change.detail` of the call that landed (``None`` when it returned a bare document).
    detail: T | None = None
    #: How many times the write was tried (1 unless a concurrent writer got in first).
    attempts: int = 1


@dataclass(frozen=True)
class Plan(Generic[T]):
    """The files one call of an update function asks to write (the pure part of :meth:`Store.update`)."""

    files: dict[str, str]  # path → text; archive parts first, the state file last; empty when nothing changes
    message: str  # the Change's own commit message ("" for none)
    document: StateDocument
    detail: T | None


@dataclass(frozen=True)
class LogEntry:
    """One commit that touched a program's state file."""

    commit: str
    when: datetime
    author: str
    message: str


UpdateFn = Callable[[StateDocument | None], StateDocument | Change[T]]


DEFAULT_MAX_TRIES = 100  # how many times a write may start again after a concurrent writer got in first
DEFAULT_MAX_WAIT = 300.0  # and for how many seconds


class Store(abc.ABC):
    """A place holding ``{program}.md`` state files, their archives and shared files."""

    max_bytes: int
    #: The git store's class, set by :mod:`statefile.store.git.store` when it loads (this module cannot import it).
    git_store: ClassVar[type[GitStore] | None] = None

    @staticmethod
    def open(
        path: str | os.PathLike[str],
        branch: str = DEFAULT_BRANCH,
        remote: str | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        author: str | None = None,
        max_tries: int = DEFAULT_MAX_TRIES,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> GitStore:
        """Open the git repository at (or above) ``path`` (found as git finds it) and keep state files on ``branch``.

        With ``remote`` (a configured remote's name such as ``"origin"``, or a URL) every write fetches the branch,
        commits on its tip and pushes (never forced), starting again on a concurrent write, with backoff, up to
        ``max_tries`` times and ``max_wait`` seconds.  ``author`` is ``"Name <email>"``; without it commits carry
        git's own identity, and where git has none, ``statefile <statefile@users.noreply.github.com>``.
        """
        if Store.git_store is None:
            raise RuntimeError("statefile.store.git is not loaded; import statefile.store")
        return Store.git_store(
            path, branch, remote, max_bytes=max_bytes, author=author, max_tries=max_tries, max_wait=max_wait
        )

    #: How messages say where a file is: "on branch memory/autoloop", "in /tmp/memory".
    where: str = ""

    def read(self, program: str) -> StateDocument | None:
        """The parsed state file of ``program``, or ``None`` when it does not exist."""
        text = self.read_text(program)
        return None if text is None else parse(text)

    def read_text(self, program: str) -> str | None:
        """The raw text of ``{program}.md`` or ``None``; InvalidDataError if it is not UTF-8 or not a file."""
        return self._read_file(state_path(program))

    @abc.abstractmethod
    def _read_file(self, path: str) -> str | None:
        """The text of the file at ``path``, ``None`` when there is none."""

    def read_texts(
        self, programs: Iterable[str], *, errors: dict[str, StatefileError] | None = None
    ) -> dict[str, str | None]:
        """:meth:`read_text` for many programs at once (a git store reads them in one batch, at one tip); with
        ``errors`` given, a program that cannot be read is left out and its error stored there instead."""
        return read_each(programs, self.read_text, errors)

    @abc.abstractmethod
    def programs(self) -> dict[str, int]:
        """Every top-level ``*.md`` state file: program name (without ``.md``) → size in bytes."""

    @abc.abstractmethod
    def unreadable(self) -> dict[str, str]:
        """Top-level ``{name}.md`` entries that look like programs but cannot be read (a link, a submodule, a
        folder, a missing object, a FIFO, a name Windows reserves): name → why, in one line.  :meth:`programs`
        leaves them out; ``check``, ``list`` and ``compact --all`` report them as errors."""

    def archive_hint(self, program: str) -> str:
        """Where a person finds ``program``'s archive parts in this store (``archive/perf/``; repo-memory's
        ``_archive.perf.*.md``), for range lines and messages."""
        return NESTED.hint(program)

    def archive_path(self, program: str, part: str) -> str:
        """The path of archive part ``part`` (``0001.md``) of ``program`` in this store, as a person finds it."""
        return NESTED.part_path(program, part)

    def archive_part_paths(self, program: str) -> list[str]:
        """Every archive part of ``program``, in *every* layout, as paths for reading: oldest first within a layout,
        the store's own layout last (its parts are the newest)."""
        # The store's own layout through archive_parts: it refuses what is no archive, as every write does.
        own = [self.archive_path(program, part) for part in self.archive_parts(program)]
        own_path = self.archive_path(program, "0001.md")
        own_kind = next(k for k in LAYOUT_KINDS if ArchiveLayout(k).part_path(program, "0001.md") == own_path)
        found: dict[str, list[tuple[int, str]]] = {kind: [] for kind in LAYOUT_KINDS if kind != own_kind}
        for path in self.paths():
            folder, _, name = path.rpartition("/")
            for kind in found:
                layout = ArchiveLayout(kind)
                if folder == layout.folder(program) and (part := layout.part_name(program, name)) is not None:
                    found[kind].append((part_number(part) or 0, path))
        return [path for kind in found for _, path in sorted(found[kind])] + own

    def read_path(self, path: str) -> str:
        """The text of the file at ``path`` (relative to the store root, as :meth:`paths` lists it); NotFoundError
        when there is none, InvalidDataError when it is not UTF-8 text in a regular file."""
        if (text := self._read_file(path)) is None:
            raise NotFoundError(f"{path} is not {self.where}")
        return text

    @abc.abstractmethod
    def archive_parts(self, program: str) -> list[str]:
        """The archive part file names of ``program``, oldest first (``["0001.md", …]``)."""

    def read_archive(self, program: str, part: str) -> str:
        """The text of one archive part; NotFoundError when it does not exist."""
        try:
            return self.read_path(self.archive_path(validate_program(program), validate_part(part)))
        except NotFoundError:
            raise NotFoundError(
                f"archive part {part} of {program} is not {self.where}; list parts with archive_parts()"
            ) from None

    @abc.abstractmethod
    def read_all(self) -> dict[str, str]:
        """Every text file in the store: relative path → text.  Files that are not UTF-8 are skipped unless they
        are ``.md`` files (then InvalidDataError); symlinks and submodules are refused with InvalidDataError."""

    def _text(self, path: str, data: bytes) -> str | None:
        """``data`` as :meth:`read_all` returns it: ``None`` for a binary file (none of ours), InvalidDataError for
        a ``.md`` file that is not UTF-8."""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return decode_text(data, f"{path} {self.where}") if path.endswith(".md") else None

    def paths(self) -> list[str]:
        """Every file path in the store, sorted (what ``check`` looks at for names that differ only in case); this
        default reads every file, a store that can list them without reading overrides it."""
        return sorted(self.read_all())

    def log(self, program: str, limit: int = 50) -> list[LogEntry]:
        """Commits that touched ``{program}.md``, newest first (empty for stores without history)."""
        state_path(program)
        return []

    def log_patches(self, program: str, limit: int = 50) -> dict[str, str]:
        """What each of those commits changed in ``{program}.md``, as a unified diff: commit → patch text (empty
        without history)."""
        return {}

    def log_texts(self, program: str, limit: int = 50) -> dict[str, tuple[str | None, str | None]]:
        """``{program}.md`` before and after each of those commits: commit → (before, after), ``None`` where the file
        did not exist.  Empty without history, and where the history cannot be read within the read limit:
        callers show less, never fail, for it."""
        return {}

    @abc.abstractmethod
    def update(self, program: str, fn: UpdateFn[T], message: str = "") -> UpdateResult[T]:
        """Apply ``fn`` to the current document of ``program`` and store the result atomically.

        ``fn(doc_or_None)`` returns a :class:`StateDocument` or a :class:`Change`.  On a concurrent write the
        store re-reads and calls ``fn`` again, so ``fn`` must be a pure function of its argument.  If ``fn``
        raises, nothing is written; a result over ``max_bytes`` raises BudgetError and changes nothing.
        ``message`` is the commit message unless the :class:`Change` carries its own (one of them must).
        """

    @abc.abstractmethod
    def write_files(self, files: Mapping[str, str | None], message: str) -> UpdateResult[None]:
        """Write several files in one atomic batch (one commit); a ``None`` value deletes that file."""

    def interrupted_write(self) -> str | None:
        """What a Ctrl-C arriving now must say about this store's writes (they landed, or may have, and how to
        look); ``None`` while nothing it wrote can have reached the memory.  A folder's writes are each one
        rename, done or not."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook: only stores holding resources override it
        """Release resources (child processes of a git store); the store is unusable afterwards."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# -- the shared, pure part of an update ----------------------------------------------------------------------------


def state_path(program: str) -> str:
    """Relative path of ``program``'s state file; UsageError for a name that is no program name (every way to a
    program's file comes through here, so this is where stores validate the name)."""
    return f"{validate_program(program)}.md"


def read_each(
    names: Iterable[str], read: Callable[[str], str | None], errors: dict[str, StatefileError] | None
) -> dict[str, str | None]:
    """``read`` of each name; with ``errors``, a name whose read fails is left out and its error stored there."""
    texts: dict[str, str | None] = {}
    for name in names:
        try:
            texts[name] = read(name)
        except StatefileError as exc:
            if errors is None:
                raise
            errors[name] = exc
    return texts


def newest_part(names: list[str]) -> str | None:
    """The archive part with the highest number among ``names``, or ``None``."""
    parts = sorted_parts(names)
    return parts[-1] if parts else None


def sorted_parts(names: list[str]) -> list[str]:
    """Archive part names among ``names``, oldest (lowest number) first; other names are dropped."""
    numbered = sorted((number, name) for name in names if (number := part_number(name)) is not None)
    return [name for _, name in numbered]


def plan_update(
    program: str,
    current: str | None,
    fn: UpdateFn[T],
    *,
    max_bytes: int,
    last_part: Callable[[], tuple[str, str] | None],
    label: str,
    layout: ArchiveLayout = NESTED,
) -> Plan[T]:
    """Run ``fn`` on ``current``: the :class:`Plan` to write, archive parts first (the order a folder writes them
    in).  ``last_part`` is called only when there is archive text; ``layout`` says where the parts go.  BudgetError
    (nothing is written) when the new state file is over ``max_bytes``."""
    path = state_path(program)
    result = fn(None if current is None else parse(current))
    change: Change[T]
    if isinstance(result, StateDocument):
        change = Change(result)
    elif isinstance(result, Change):
        change = result
    else:
        raise TypeError(f"the update function returned {type(result).__name__}, not a StateDocument or Change")
    text = change.document.render()
    size = len(checked_bytes(text, path))
    if size > max_bytes:
        raise BudgetError(
            f"{program}.md would be over its budget at {budget_text(size, max_bytes)}; nothing was written — "
            f"run `statefile compact {program}` to fold old entries into the archive"
        )
    files: dict[str, str] = {}
    if change.archive:
        when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        chunk = make_chunk(change.archive, when=when, what=change.archive_label or label)
        for name, content in plan_append(program, last_part(), chunk, max_bytes):
            files[layout.part_path(program, name)] = content
    if files or text != current:
        files[path] = text
    return Plan(files, change.message, change.document, change.detail)


def refuse_case_twin(program: str, names: Iterable[str]) -> None:
    """UsageError when creating ``program`` would put ``{program}.md`` beside a name differing only in case
    (``PERF.md`` beside ``perf.md``: one file on macOS and Windows, where a checkout would lose one of them)."""
    twins = case_twins([state_path(program)], names)
    if twins:
        twin = twins[0][1]
        raise UsageError(
            f"program {program!r} would sit beside {twin}, a name that differs only in case — a checkout on macOS "
            f"or Windows could hold only one of them; use {twin[:-3]!r} or another name"
        )


def checked_bytes(text: str, path: str) -> bytes:
    """UTF-8 bytes of ``text`` for ``path``; InvalidDataError when they would not be valid UTF-8 (text read with
    surrogateescape carries undecodable bytes as lone surrogates: every strict reader would reject the file)."""
    data = encode(text)
    if not text.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidDataError(
                f"{path}: the new text is not valid UTF-8 (byte {exc.start}); nothing was written — fix the "
                "undecodable characters first"
            ) from None
    return data


def decode_text(data: bytes, path: str) -> str:
    """Strict UTF-8 text of a stored file; InvalidDataError (never a rewrite) when it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(
            f"{path}: not valid UTF-8 (byte {exc.start}); re-save it as UTF-8 — statefile will not rewrite it"
        ) from None


def encoded_files(files: Mapping[str, str | None], max_bytes: int) -> dict[str, bytes | None]:
    """What :meth:`Store.write_files` writes: path → bytes (``None`` deletes), each path valid and each file within
    ``max_bytes`` (BudgetError otherwise: nothing is written)."""
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
    """The subject line of a commit message (used as the default archive chunk label)."""
    return message.strip().splitlines()[0] if message.strip() else ""
