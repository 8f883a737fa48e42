"""Files outside git: the one way statefile replaces one (temp file, fsync, rename, fsync the folder) and the one
way it reads a file a user or a tool names (never blocking on a FIFO, never past its limit).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from statefile.errors import EnvironmentFailure, StatefileError, UsageError

#: The largest export ``import`` reads: every file of a branch, far beyond any real memory branch.
IMPORT_LIMIT = 128 * 1024 * 1024
#: The largest small input statefile reads: a config file, the scheduler's autoloop.json, a run context.
INPUT_LIMIT = 8 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))  # fmt: skip


def not_regular(mode: int) -> str:
    """What a file of ``mode`` is when it is not a regular file ("FIFO", "folder", …); "" for a regular file."""
    return "" if stat.S_ISREG(mode) else next((name for test, name in _KINDS if test(mode)), "special file")


def read_regular_file(path: Path, *, limit: int, what: str = "", error: type[StatefileError] = UsageError) -> bytes:
    """The bytes of the file at ``path``, which must be a regular file of at most ``limit`` bytes."""
    name = f"{what} {path}" if what else str(path)
    fd = os.open(path, _READ_FLAGS)
    try:
        info = os.fstat(fd)
        kind = not_regular(info.st_mode)
        if kind:
            raise error(
                f"{name} is a {kind}, not a regular file; statefile does not read it (a FIFO waits for a writer, a "
                "device never ends) — pass a regular file"
            )
        if info.st_size > limit:
            raise error(f"{name} is {info.st_size:,} bytes, more than the {limit:,} statefile reads; nothing was read")
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise error(f"{name} grew past the {limit:,} bytes statefile reads while it was read; nothing was read")
        return data
    finally:
        os.close(fd)


def replace_file(target: Path, data: bytes, *, mode: int) -> None:
    """Write ``data`` to ``target`` atomically, with permission bits ``mode``; the folder must exist."""
    # mkstemp creates the file with O_EXCL in the target's folder: never written through something someone else put
    # there, and on the same file system, so os.replace is a rename.
    import tempfile  # ~10 ms to import; only a write needs it (``statefile report`` without --out does not)

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def write_output(target: Path, data: bytes, *, append: bool = False) -> None:
    """Write ``data`` to a file a user named (``--out``): the way that file wants to be written."""
    try:
        info: os.stat_result | None = None
        with contextlib.suppress(FileNotFoundError):
            info = os.stat(target)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{target} is a folder; name a file to write")
        if info is not None and not stat.S_ISREG(info.st_mode):
            _write_into(target, data, append=append)
        elif append:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        else:
            mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
            real = Path(os.path.realpath(target))
            replace_file(real, data, mode=mode)
    except OSError as exc:
        raise output_error(exc, target) from None


def _write_into(target: Path, data: bytes, *, append: bool) -> None:
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (os.O_APPEND if append else 0)
    try:
        fd = os.open(target, flags)  # a FIFO nobody reads: ENXIO at once, instead of waiting for a reader
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UsageError(f"{target} is a FIFO nobody is reading; start its reader first, or name a file") from None
        raise
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def output_error(exc: OSError, target: Path) -> StatefileError:
    """The one-line error for an OSError while writing ``target``: the machine's problem said as one."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return EnvironmentFailure(f"cannot write {target}: the disk is full ({exc.strerror}); free space, then run "
                                  "the command again")  # fmt: skip
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return EnvironmentFailure(f"cannot write {target} ({exc.strerror}); make it writable for this user, or "
                                  "write elsewhere")  # fmt: skip
    return UsageError(f"cannot write {target} ({exc.strerror}); check the folder exists and is writable")


def fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in ``folder`` durable (POSIX); a no-op where folders cannot be opened or synced."""
    with contextlib.suppress(OSError):  # some platforms cannot open a folder, some file systems refuse its fsync
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
