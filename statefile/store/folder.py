"""State files in a plain folder, e.g. gh-aw's repo-memory clone at ``/tmp/gh-aw/repo-memory/<id>``.

Writes hold an exclusive ``fcntl.flock`` on ``.statefile.lock`` in the folder, so two processes updating the same
folder run one after the other (reads take no lock: every file is replaced atomically, so a reader sees the old
bytes or the new ones).  Each file is written to a temporary file beside it, flushed, fsynced and renamed over the
old one, then the folder is fsynced.  One update writes its archive parts before the state file, so a crash
between the two leaves archive text whose state-file change did not land (harmless), never a state file whose
removed text was not archived.  Symbolic links are refused, never followed.  Names starting with ``.`` (``.git``,
the lock file, temporary files) are not part of the store.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from statefile.errors import BudgetError, InvalidDataError, NotFoundError, UsageError
from statefile.model.archive import archive_dir
from statefile.store.atomic import fsync_dir, replace_file
from statefile.store.base import (
    DEFAULT_MAX_BYTES,
    LogEntry,
    Store,
    T,
    UpdateFn,
    UpdateResult,
    checked_bytes,
    decode_text,
    first_line,
    newest_part,
    plan_update,
    sorted_parts,
    state_path,
)
from statefile.store.files import read_limit, too_large
from statefile.store.names import is_program_name, validate_part, validate_path, validate_program

LOCK_NAME = ".statefile.lock"
_NEW_FILE_MODE = 0o644


class FolderStore(Store):
    """State files in the folder ``path`` (which must exist).  There are no commits: ``log`` returns []."""

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(path)
        if not self.root.is_dir():
            raise NotFoundError(f"{self.root}: no such folder; create it or check the --dir path")
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise UsageError(f"max_bytes must be a positive number of bytes, not {max_bytes!r}")
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"<FolderStore {self.root}>"

    # -- file access ---------------------------------------------------------------------------------------------

    def _folder(self, parts: list[str], *, create: bool) -> Path | None:
        """The folder ``root/parts…``, refusing symbolic links on the way; ``None`` if missing (and not created)."""
        folder = self.root
        for index, part in enumerate(parts):
            folder = folder / part
            try:
                mode = os.lstat(folder).st_mode
            except FileNotFoundError:
                if not create:
                    return None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(folder)
                mode = os.lstat(folder).st_mode
            if not stat.S_ISDIR(mode):
                where = "/".join(parts[: index + 1])
                raise InvalidDataError(
                    f"{where} in {self.root} is a {_kind(mode)}, not a folder; statefile will not follow it — "
                    "replace it with a folder"
                )
        return folder

    def _read_bytes(self, path: str) -> bytes | None:
        *parents, name = path.split("/")
        folder = self._folder(parents, create=False)
        if folder is None:
            return None
        try:
            # O_NOFOLLOW: a symbolic link fails with ELOOP instead of being followed.
            fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InvalidDataError(
                    f"{path} in {self.root} is a symbolic link; statefile refuses to follow it — replace it with "
                    "a regular file"
                ) from None
            raise NotFoundError(f"{folder / name}: cannot read ({exc.strerror}); check permissions") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InvalidDataError(f"{path} in {self.root} is a {_kind(info.st_mode)}, not a regular file")
            if info.st_size > read_limit(self.max_bytes):
                raise too_large(f"{path} in {self.root}", info.st_size, self.max_bytes)
            return handle.read()

    def _read(self, path: str) -> str | None:
        data = self._read_bytes(path)
        return None if data is None else decode_text(data, f"{path} in {self.root}")

    def _write(self, path: str, data: bytes | None) -> None:
        """Replace (or with ``None`` delete) ``path`` atomically: temp file, fsync, rename, fsync the folder."""
        *parents, name = path.split("/")
        folder = self._folder(parents, create=data is not None)
        if folder is None:
            return
        target = folder / name
        try:
            current: os.stat_result | None = os.lstat(target)
        except FileNotFoundError:
            current = None
        if current is not None and not stat.S_ISREG(current.st_mode):
            raise InvalidDataError(
                f"{path} in {self.root} is a {_kind(current.st_mode)}, not a regular file; statefile will not "
                "replace it — remove it first"
            )
        if data is None:
            if current is not None:
                os.unlink(target)
                fsync_dir(folder)
            return
        replace_file(target, data, mode=stat.S_IMODE(current.st_mode) if current is not None else _NEW_FILE_MODE)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            fd = os.open(self.root / LOCK_NAME, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise NotFoundError(
                f"{self.root / LOCK_NAME}: cannot create the lock file ({exc.strerror}); the folder must be writable"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # blocks until the other writer is done; released on close or death
            yield
        finally:
            os.close(fd)

    def _write_batch(self, files: Mapping[str, bytes | None]) -> None:
        # Nested files (archive parts) first, top-level state files last: see the module docstring.
        for path in sorted(files, key=lambda p: "/" not in p):
            self._write(path, files[path])

    # -- the Store interface -------------------------------------------------------------------------------------

    def read_text(self, program: str) -> str | None:
        """The raw text of ``{program}.md``, or ``None``."""
        validate_program(program)
        return self._read(state_path(program))

    def programs(self) -> dict[str, int]:
        """Program name → size in bytes for every regular top-level ``*.md`` file with a valid program name."""
        sizes: dict[str, int] = {}
        with os.scandir(self.root) as entries:
            for entry in entries:
                name = entry.name[:-3]
                if entry.name.endswith(".md") and is_program_name(name) and entry.is_file(follow_symlinks=False):
                    sizes[name] = entry.stat(follow_symlinks=False).st_size
        return dict(sorted(sizes.items()))

    def _archive_names(self, program: str) -> list[str]:
        folder = self._folder(archive_dir(program).split("/"), create=False)
        return [] if folder is None else os.listdir(folder)

    def archive_parts(self, program: str) -> list[str]:
        """Archive part names of ``program``, oldest first."""
        validate_program(program)
        return sorted_parts(self._archive_names(program))

    def read_archive(self, program: str, part: str) -> str:
        """The text of archive part ``part`` of ``program``; NotFoundError when there is none."""
        validate_program(program)
        validate_part(part)
        text = self._read(f"{archive_dir(program)}/{part}")
        if text is None:
            raise NotFoundError(f"archive part {part} of {program} is not in {self.root}; see archive_parts()")
        return text

    def read_all(self) -> dict[str, str]:
        """Every text file below the folder (names starting with ``.`` skipped): relative path → text."""
        files: dict[str, str] = {}
        for folder, dirs, names in os.walk(self.root):
            rel = Path(folder).relative_to(self.root)
            for name in dirs:
                if not name.startswith(".") and os.path.islink(os.path.join(folder, name)):
                    raise InvalidDataError(f"{(rel / name).as_posix()} in {self.root} is a symbolic link; remove it")
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.startswith("."):
                    continue
                path = (rel / name).as_posix()
                data = self._read_bytes(path)
                if data is None:
                    continue
                try:
                    files[path] = data.decode("utf-8")
                except UnicodeDecodeError:
                    if path.endswith(".md"):
                        decode_text(data, f"{path} in {self.root}")  # raises InvalidDataError
        return files

    def log(self, program: str, limit: int = 50) -> list[LogEntry]:
        """A folder keeps no history: always ``[]``."""
        validate_program(program)
        return []

    def update(self, program: str, fn: UpdateFn[T], message: str) -> UpdateResult[T]:
        """Apply ``fn`` under the folder lock and write the result atomically (``commit`` is ``None``)."""
        validate_program(program)
        with self._locked():
            plan = plan_update(
                program,
                self._read(state_path(program)),
                fn,
                max_bytes=self.max_bytes,
                last_part=lambda: self._last_part(program),
                label=first_line(message) or "update",
            )
            if plan.files:
                self._write_batch({path: checked_bytes(text, path) for path, text in plan.files.items()})
        return UpdateResult(None, bool(plan.files), tuple(plan.files), plan.document, plan.detail)

    def _last_part(self, program: str) -> tuple[str, str] | None:
        name = newest_part(self._archive_names(program))
        if name is None:
            return None
        text = self._read(f"{archive_dir(program)}/{name}")
        return None if text is None else (name, text)

    def write_files(self, files: Mapping[str, str | None], message: str) -> UpdateResult[None]:
        """Write ``files`` (path → text, ``None`` deletes) under the folder lock (``commit`` is ``None``)."""
        changes: dict[str, bytes | None] = {}
        for path, content in files.items():
            validate_path(path)
            data = None if content is None else checked_bytes(content, path)
            if data is not None and len(data) > self.max_bytes:
                raise BudgetError(
                    f"{path} is {len(data)} bytes, over the budget of {self.max_bytes} bytes; nothing was written "
                    "— run `statefile compact` on it first"
                )
            changes[path] = data
        with self._locked():
            self._write_batch(changes)
        return UpdateResult(None, bool(changes), tuple(changes))


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISDIR(mode):
        return "folder"
    return "regular file" if stat.S_ISREG(mode) else "special file"
