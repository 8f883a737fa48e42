"""State files in a plain folder (gh-aw's repo-memory clone).  Writes hold an ``flock`` on ``.statefile.lock``
(removed afterwards) and replace each file atomically, archive parts first: a crash leaves extra archive text at
worst.  Only regular files are opened (``lstat``, then ``O_NOFOLLOW | O_NONBLOCK``); ``.`` names are not the store's.
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

from statefile.defaults import DEFAULT_MAX_BYTES
from statefile.errors import EnvironmentFailure, InvalidDataError, NotFoundError, UsageError
from statefile.model.archive import NESTED, ArchiveLayout
from statefile.store.atomic import check_lines, fsync_dir, not_regular, os_error, read_limit, replace_file, too_large
from statefile.store.base import Store, T, UpdateFn, UpdateResult, decode_text, encoded_files

LOCK_NAME = ".statefile.lock"
#: A temporary file older than this, found under the lock, was left by a writer that died: it is removed.
STALE_TEMP_SECONDS = 60.0
# What atomic.replace_file names its temporary files: ".{target}.{random}.tmp".
_TEMP = re.compile(r"\.(.+)\.[A-Za-z0-9_]{6,}\.tmp")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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

    def _refuse(self, path: str, mode: int, wanted: str = "a regular file") -> InvalidDataError:
        """Every refusal of what is not ``wanted`` (a link, a FIFO, a device…): nothing else is followed or opened."""
        return InvalidDataError(
            f"{path} in {self.root} is a {not_regular(mode) or 'regular file'}, not {wanted}; statefile will not "
            f"follow or open it — replace it with {wanted} or remove it"
        )

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
                raise self._refuse("/".join(parts[: index + 1]), mode, "a folder")
        return folder

    def _read_bytes(self, path: str) -> bytes | None:
        *parents, name = path.split("/")
        folder = self._folder(parents, create=False)
        try:
            if folder is None:
                return None
            # Look before opening: opening a FIFO waits for a writer, a device streams forever.
            if not stat.S_ISREG(mode := os.lstat(folder / name).st_mode):
                raise self._refuse(path, mode)
            # Second guard, against a swap after the lstat: no link is followed and no open waits.
            fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._refuse(path, stat.S_IFLNK) from None
            raise os_error(exc, f"read {path} in {self.root}", NotFoundError) from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise self._refuse(path, info.st_mode)
            if info.st_size > read_limit(self.max_bytes):
                raise too_large(f"{path} in {self.root}", info.st_size, self.max_bytes)
            return check_lines(f"{path} in {self.root}", handle.read(), self.max_bytes)

    def _read_at(self, at: str | None, path: str) -> str | None:
        data = self._read_bytes(path)
        return None if data is None else decode_text(data, f"{path} in {self.root}")

    def _names(self, at: str | None, program: str = "") -> list[str]:
        if not program:
            return os.listdir(self.root)
        layout = self.archive_layout(program)
        where = layout.folder(program)  # "": the store's own folder, which may be a link (gh-aw's repo-memory)
        folder = self._folder(where.split("/"), create=False) if where else self.root
        names = os.listdir(folder) if folder is not None else []
        return [name for entry in names if (name := layout.part_name(program, entry)) is not None]

    def _top_md(self) -> dict[str, tuple[int, str]]:
        found: dict[str, tuple[int, str]] = {}
        with os.scandir(self.root) as entries:
            for entry in entries:
                if entry.name.endswith(".md"):
                    info = entry.stat(follow_symlinks=False)
                    why = "" if stat.S_ISREG(info.st_mode) else str(self._refuse(entry.name, info.st_mode))
                    found[entry.name[:-3]] = (info.st_size, why)
        return found

    def _write(self, path: str, data: bytes | None) -> None:
        *parents, name = path.split("/")
        folder = self._folder(parents, create=data is not None)
        if folder is None:
            return
        target = folder / name
        current: os.stat_result | None = None
        with contextlib.suppress(FileNotFoundError):
            current = os.lstat(target)
        if current is not None and not stat.S_ISREG(current.st_mode):
            raise self._refuse(path, current.st_mode)
        try:
            if data is not None:
                mode = stat.S_IMODE(current.st_mode) if current is not None else 0o644
                replace_file(target, data, mode=mode)  # removes its temporary file if the write fails
            elif current is not None:
                os.unlink(target)
                fsync_dir(folder)
        except OSError as exc:
            raise os_error(exc, f"write {path} in {self.root}", NotFoundError) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the folder's write lock while the block runs; the lock file is gone again afterwards."""
        path = self.root / LOCK_NAME
        while True:
            try:
                # O_NOFOLLOW: a link there is refused (the lock file is removed afterwards, never a link's target).
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | _CLOEXEC, 0o644)
            except OSError as exc:
                error = os_error(exc, f"create the lock file {path}")
                if not isinstance(error, EnvironmentFailure):  # something is in its place (a folder)
                    error = EnvironmentFailure(
                        f"cannot open the lock file {path} ({exc.strerror}); remove what is in its place, then retry"
                    )
                raise error from None
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

    def _write_batch(self, files: Mapping[str, bytes | None]) -> None:
        """Under the lock: nested files (archive parts) first, top-level state files last (see the module doc)."""
        order = sorted(files, key=lambda p: "/" not in p)
        cutoff = time.time() - STALE_TEMP_SECONDS
        for name in dict.fromkeys(path.rpartition("/")[0] for path in order):
            folder = self._folder(name.split("/"), create=False) if name else self.root
            for entry in os.scandir(folder) if folder is not None else ():  # temporary files a killed writer left
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if _TEMP.fullmatch(entry.name) and stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                        os.unlink(entry.path)
        for path in order:
            self._write(path, files[path])

    def _layout(self, program: str) -> ArchiveLayout:
        return self.archive_layout(program)

    def read_all(self) -> dict[str, str]:
        """Every text file below the folder (names starting with ``.`` skipped): relative path → text."""
        files: dict[str, str] = {}
        for path in self.paths(linked_folders=True):  # a link, to a folder too, is refused here
            data = self._read_bytes(path)
            if data is not None and (text := self._text(path, data)) is not None:
                files[path] = text
        return files

    def paths(self, *, linked_folders: bool = False) -> list[str]:
        """Every file below the folder (``.`` names skipped), links to files included, without reading any; with
        ``linked_folders``, links to folders too (:meth:`read_all` refuses them: it never leaves the folder)."""
        found: list[str] = []
        for folder, dirs, names in os.walk(self.root):  # never into a linked folder: os.walk does not follow links
            rel = Path(folder).relative_to(self.root)
            links = [name for name in dirs if os.path.islink(os.path.join(folder, name))]
            dirs[:] = [name for name in dirs if not name.startswith(".") and name not in links]
            listed = [*names, *links] if linked_folders else names
            found.extend((rel / name).as_posix() for name in listed if not name.startswith("."))
        return sorted(found)

    def update(self, program: str, fn: UpdateFn[T], message: str = "") -> UpdateResult[T]:
        """Apply ``fn`` under the folder lock and write the result atomically (``commit`` is ``None``)."""
        with self._locked():
            files, change = self._plan(program, None, fn, message)
            self._write_batch(files)
        return UpdateResult(None, bool(files), tuple(files), change.document, change.detail)

    def write_files(self, files: Mapping[str, str | None], message: str) -> UpdateResult[None]:
        """Write ``files`` (path → text, ``None`` deletes) under the folder lock (``commit`` is ``None``)."""
        changes = encoded_files(files, self.max_bytes)
        with self._locked():
            self._write_batch(changes)
        return UpdateResult(None, bool(changes), tuple(changes))
