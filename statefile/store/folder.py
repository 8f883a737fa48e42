"""State files in a plain folder, e.g. gh-aw's repo-memory clone at ``/tmp/gh-aw/repo-memory/<id>``.

Writes hold an exclusive ``flock`` on ``.statefile.lock`` (removed afterwards: the folder is pushed as it is) and
replace each file atomically (temp file, fsync, rename, fsync the folder), archive parts before the state file,
so a crash can leave harmless extra archive text, never unarchived removed text.  Reads take no lock.  Only regular
files are opened (``lstat`` first, then ``O_NOFOLLOW | O_NONBLOCK``): a link is refused, a FIFO never waited on.
Names starting with ``.`` are not part of the store.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from statefile.errors import EnvironmentFailure, InvalidDataError, NotFoundError, UsageError
from statefile.model.archive import NESTED, ArchiveLayout
from statefile.store.atomic import fsync_dir, not_regular, replace_file
from statefile.store.base import (
    DEFAULT_MAX_BYTES,
    Store,
    T,
    UpdateFn,
    UpdateResult,
    checked_bytes,
    decode_text,
    encoded_files,
    first_line,
    newest_part,
    plan_update,
    refuse_case_twin,
    sorted_parts,
    state_path,
)
from statefile.store.files import check_lines, read_limit, too_large
from statefile.store.names import is_program_name, validate_program, windows_reserved

LOCK_NAME = ".statefile.lock"
_NEW_FILE_MODE = 0o644
#: A temporary file older than this, found under the lock, was left by a writer that died: it is removed.
STALE_TEMP_SECONDS = 60.0
# What atomic.replace_file names its temporary files: ".{target}.{random}.tmp".
_TEMP = re.compile(r"\.(.+)\.[A-Za-z0-9_]{6,}\.tmp")
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class FolderStore(Store):
    """State files in the folder ``path`` (which must exist).  There are no commits: ``log`` returns []."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        archive_layout: Callable[[str], ArchiveLayout] | None = None,
    ) -> None:
        self.root = Path(path)
        if not self.root.is_dir():
            raise NotFoundError(f"{self.root}: no such folder; create it or check the --dir path")
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise UsageError(f"max_bytes must be a positive number of bytes, not {max_bytes!r}")
        self.max_bytes = max_bytes
        self.archive_layout: Callable[[str], ArchiveLayout] = archive_layout or (lambda program: NESTED)
        self.where = f"in {self.root}"

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

    def _not_a_file(self, path: str, mode: int) -> InvalidDataError:
        if stat.S_ISLNK(mode):
            return InvalidDataError(
                f"{path} in {self.root} is a symbolic link; statefile refuses to follow it — replace it with a "
                "regular file"
            )
        return InvalidDataError(
            f"{path} in {self.root} is a {_kind(mode)}, not a regular file; statefile will not open it — replace it "
            "with a regular file"
        )

    def _read_bytes(self, path: str) -> bytes | None:
        *parents, name = path.split("/")
        folder = self._folder(parents, create=False)
        if folder is None:
            return None
        try:
            # Look before opening: opening a FIFO waits for a writer, a device streams forever.
            mode = os.lstat(folder / name).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _environment(exc, f"reading {path} in {self.root}") from None
        if not stat.S_ISREG(mode):
            raise self._not_a_file(path, mode)
        try:
            # Second guard, against a swap after the lstat: no link is followed and no open waits.
            fd = os.open(folder / name, _READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._not_a_file(path, stat.S_IFLNK) from None
            raise _environment(exc, f"reading {path} in {self.root}") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise self._not_a_file(path, info.st_mode)
            if info.st_size > read_limit(self.max_bytes):
                raise too_large(f"{path} in {self.root}", info.st_size, self.max_bytes)
            return check_lines(f"{path} in {self.root}", handle.read(), self.max_bytes)

    def _read_file(self, path: str) -> str | None:
        data = self._read_bytes(path)
        return None if data is None else decode_text(data, f"{path} in {self.root}")

    def _write(self, path: str, data: bytes | None) -> None:
        """Replace (or with ``None`` delete) ``path`` atomically: temp file, fsync, rename, fsync the folder."""
        *parents, name = path.split("/")
        folder = self._folder(parents, create=data is not None)
        if folder is None:
            return
        target = folder / name
        current: os.stat_result | None = None
        with contextlib.suppress(FileNotFoundError):
            current = os.lstat(target)
        if current is not None and not stat.S_ISREG(current.st_mode):
            raise InvalidDataError(
                f"{path} in {self.root} is a {_kind(current.st_mode)}, not a regular file; statefile will not "
                "replace it — remove it first"
            )
        try:
            if data is None:
                if current is not None:
                    os.unlink(target)
                    fsync_dir(folder)
                return
            mode = stat.S_IMODE(current.st_mode) if current is not None else _NEW_FILE_MODE
            replace_file(target, data, mode=mode)  # removes its temporary file if the write fails
        except OSError as exc:
            raise _environment(exc, f"writing {path} in {self.root}") from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the folder's write lock while the block runs; the lock file is gone again afterwards."""
        path = self.root / LOCK_NAME
        while True:
            fd = self._open_lock(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # blocks until the other writer is done; released on close or death
                held = os.fstat(fd)
                current = None
                with contextlib.suppress(FileNotFoundError):
                    current = os.lstat(path)
            except BaseException:
                os.close(fd)
                raise
            if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                break
            os.close(fd)  # removed (or replaced) by the writer before us: lock the file that is there now
        try:
            yield
        finally:
            try:
                if stat.S_ISREG(held.st_mode):  # never remove what someone else put in its place (a FIFO)
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
            finally:
                os.close(fd)

    def _open_lock(self, path: Path) -> int:
        try:
            # O_NOFOLLOW: a link there is refused (the lock file is removed afterwards, never a link's target).
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            error = _environment(exc, f"creating the lock file {path}")
            if not isinstance(error, EnvironmentFailure):
                # Something else is where the lock file goes (a folder): no write in this folder can start.
                error = EnvironmentFailure(
                    f"cannot open the lock file {path} ({exc.strerror}); statefile keeps an empty file there while "
                    "it writes — remove what is in its place, then run the command again"
                )
            raise error from None

    def _write_batch(self, files: Mapping[str, bytes | None]) -> None:
        # Nested files (archive parts) first, top-level state files last: see the module docstring.
        order = sorted(files, key=lambda p: "/" not in p)
        for folder in dict.fromkeys(path.rpartition("/")[0] for path in order):
            self._remove_stale_temps(folder)
        for path in order:
            self._write(path, files[path])

    def _remove_stale_temps(self, folder: str) -> None:
        """Remove temporary files a killed writer left in ``folder`` (called under the lock)."""
        where = self._folder(folder.split("/"), create=False) if folder else self.root
        if where is None:
            return
        cutoff = time.time() - STALE_TEMP_SECONDS
        with os.scandir(where) as entries:
            for entry in entries:
                if not _TEMP.fullmatch(entry.name):
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                        os.unlink(entry.path)

    # -- the Store interface -------------------------------------------------------------------------------------

    def programs(self) -> dict[str, int]:
        """Program name → size in bytes for every regular top-level ``*.md`` file with a valid program name."""
        sizes: dict[str, int] = {}
        with os.scandir(self.root) as entries:
            for entry in entries:
                name = entry.name[:-3]
                if entry.name.endswith(".md") and is_program_name(name) and entry.is_file(follow_symlinks=False):
                    sizes[name] = entry.stat(follow_symlinks=False).st_size
        return dict(sorted(sizes.items()))

    def unreadable(self) -> dict[str, str]:
        """Top-level ``{name}.md`` entries that look like programs but cannot be read: name → why."""
        found: dict[str, str] = {}
        with os.scandir(self.root) as entries:
            for entry in entries:
                name = entry.name[:-3]
                if not entry.name.endswith(".md") or not (is_program_name(name) or _program_like(name)):
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
                if not stat.S_ISREG(mode):
                    found[name] = str(self._not_a_file(entry.name, mode))
                elif not is_program_name(name):
                    found[name] = f"{entry.name} in {self.root}: {name!r} is a reserved device name on Windows"
        return dict(sorted(found.items()))

    def archive_hint(self, program: str) -> str:
        return self.archive_layout(program).hint(program)

    def archive_path(self, program: str, part: str) -> str:
        return self.archive_layout(program).part_path(program, part)

    def _archive_names(self, program: str) -> list[str]:
        layout = self.archive_layout(program)
        where = layout.folder(program)
        folder = self._folder(where.split("/"), create=False) if where else self.root
        if folder is None:
            return []
        return [name for entry in os.listdir(folder) if (name := layout.part_name(program, entry)) is not None]

    def archive_parts(self, program: str) -> list[str]:
        """Archive part names of ``program``, oldest first."""
        return sorted_parts(self._archive_names(validate_program(program)))

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
                if (text := self._text(path, data)) is not None:
                    files[path] = text
        return files

    def paths(self) -> list[str]:
        """Every file below the folder (``.`` names skipped), links included, without reading any."""
        found: list[str] = []
        for folder, dirs, names in os.walk(self.root):  # never into a linked folder: os.walk does not follow links
            rel = Path(folder).relative_to(self.root)
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found.extend((rel / name).as_posix() for name in names if not name.startswith("."))
        return sorted(found)

    def update(self, program: str, fn: UpdateFn[T], message: str = "") -> UpdateResult[T]:
        """Apply ``fn`` under the folder lock and write the result atomically (``commit`` is ``None``)."""
        path = state_path(program)
        with self._locked():
            current = self._read_file(path)
            if current is None:
                refuse_case_twin(program, os.listdir(self.root))
            plan = plan_update(
                program,
                current,
                fn,
                max_bytes=self.max_bytes,
                last_part=lambda: self._last_part(program),
                label=first_line(message) or "update",
                layout=self.archive_layout(program),
            )
            if plan.files:
                self._write_batch({path: checked_bytes(text, path) for path, text in plan.files.items()})
        return UpdateResult(None, bool(plan.files), tuple(plan.files), plan.document, plan.detail)

    def _last_part(self, program: str) -> tuple[str, str] | None:
        name = newest_part(self._archive_names(program))
        text = None if name is None else self._read_file(self.archive_layout(program).part_path(program, name))
        return None if name is None or text is None else (name, text)

    def write_files(self, files: Mapping[str, str | None], message: str) -> UpdateResult[None]:
        """Write ``files`` (path → text, ``None`` deletes) under the folder lock (``commit`` is ``None``)."""
        changes = encoded_files(files, self.max_bytes)
        with self._locked():
            self._write_batch(changes)
        return UpdateResult(None, bool(changes), tuple(changes))


def _kind(mode: int) -> str:
    return not_regular(mode) or "regular file"


def _program_like(name: str) -> bool:
    """A name refused as a program only because Windows reserves it (``con``, ``NUL``): worth reporting."""
    return windows_reserved(name) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) is not None


def _environment(exc: OSError, what: str) -> EnvironmentFailure | NotFoundError:
    """The error for an OSError while reading or writing the folder: the machine's problem, said plainly."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return EnvironmentFailure(
            f"{what} failed: the disk is full ({exc.strerror}); free space, then run the command again — the state "
            "file was not changed"
        )
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return EnvironmentFailure(
            f"{what} failed ({exc.strerror}); make the folder readable and writable for this user, then run the "
            "command again — the state file was not changed"
        )
    return NotFoundError(f"{what} failed ({exc.strerror}); check the folder and its permissions")
