"""Files outside git: the one atomic replace (temp file, fsync, rename, fsync the folder), the one read of a named
file (never blocking on a FIFO, never past its limit), and how large a file statefile reads at all."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from statefile.defaults import DEFAULT_MAX_BYTES
from statefile.errors import EnvironmentFailure, InvalidDataError, NotFoundError, StatefileError, UsageError
from statefile.model.document import StateDocument, parse
from statefile.store.base import decode_text

#: The largest export ``import`` reads: every file of a branch, far beyond any real memory branch.
IMPORT_LIMIT = 128 * 1024 * 1024
#: The largest small input statefile reads: a config file, the scheduler's autoloop.json, a run context.
INPUT_LIMIT = 8 * 1024 * 1024
#: Whatever the budget, files up to this size are read (a 10,000-iteration history is about 4 MB).
MIN_READ_LIMIT = 8 * 1024 * 1024
#: Above the floor, files up to this many budgets are read: far beyond anything an agent's edits produce.
READ_LIMIT_BUDGETS = 64
#: Whatever the budget, files of up to this many lines are read (the real files have a few hundred).
MIN_LINE_LIMIT = 20_000
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))  # fmt: skip


def read_limit(max_bytes: int) -> int:
    """The largest file statefile reads for a byte budget of ``max_bytes``: 64 budgets, at least 8 MiB."""
    return max(MIN_READ_LIMIT, READ_LIMIT_BUDGETS * max_bytes)


def line_limit(max_bytes: int) -> int:
    """The most lines statefile reads in one file for a byte budget of ``max_bytes``: the budget, at least 20,000."""
    return max(MIN_LINE_LIMIT, max_bytes)


def check_lines(where: str, data: bytes, max_bytes: int) -> bytes:
    """``data`` itself, or InvalidDataError when it has more lines than :func:`line_limit` allows."""
    lines = data.count(b"\n")
    if lines > line_limit(max_bytes):
        raise InvalidDataError(
            f"{where} has {lines:,} lines, more than statefile will read ({line_limit(max_bytes):,}: the "
            f"{max_bytes:,}-byte budget in lines, at least {MIN_LINE_LIMIT:,}); nothing was changed — it is not a "
            "state file an agent wrote: remove or truncate it with git (or raise --max-bytes)"
        )
    return data


def too_large(where: str, size: int, max_bytes: int) -> InvalidDataError:
    """The error for a file over :func:`read_limit`: what, how big, what to do.  Nothing was read."""
    return InvalidDataError(
        f"{where} is {size:,} bytes, more than statefile will read ({read_limit(max_bytes):,} bytes: "
        f"{READ_LIMIT_BUDGETS} × the {max_bytes:,}-byte budget, at least {MIN_READ_LIMIT:,}); nothing was read "
        "— it is not a state file an agent wrote: remove or truncate it with git (or raise --max-bytes)"
    )


def not_regular(mode: int) -> str:
    """What a file of ``mode`` is when it is not a regular file ("FIFO", "folder", …); "" for a regular file."""
    return "" if stat.S_ISREG(mode) else next((name for test, name in _KINDS if test(mode)), "special file")


def read_regular_file(path: Path, *, limit: int, what: str = "", error: type[StatefileError] = UsageError) -> bytes:
    """The bytes of the file at ``path``, which must be a regular file of at most ``limit`` bytes."""
    name = f"{what} {path}" if what else str(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC)
    try:
        info = os.fstat(fd)
        if kind := not_regular(info.st_mode):
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


def read_text_file(path: Path, max_bytes: int = DEFAULT_MAX_BYTES, *, bounded: bool = True) -> str:
    """The UTF-8 text of ``path``; a clear error when it is missing, not a regular file, too large or not UTF-8."""
    limit = read_limit(max_bytes) if bounded else IMPORT_LIMIT
    try:
        info = os.stat(path)
        if bounded and stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise too_large(str(path), info.st_size, max_bytes)
        data = read_regular_file(path, limit=limit, error=NotFoundError)
        if bounded:
            check_lines(str(path), data, max_bytes)
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file; check the path") from None
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read ({exc.strerror}); check the path and permissions") from None
    return decode_text(data, str(path))


def read_state_file(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> StateDocument:
    """Parse the state file at ``path`` (refused unread when over :func:`read_limit` of ``max_bytes``)."""
    return parse(read_text_file(path, max_bytes))


def replace_file(target: Path, data: bytes, *, mode: int) -> None:
    """Write ``data`` to ``target`` atomically, with permission bits ``mode``; the folder must exist."""
    # mkstemp's O_EXCL file in the target's folder: never someone else's, and os.replace is a rename.
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
        if info is None or stat.S_ISREG(info.st_mode):
            if not append:
                current = os.umask(0)
                os.umask(current)
                mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~current
                replace_file(Path(os.path.realpath(target)), data, mode=mode)
                return
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _CLOEXEC
        else:
            flags = os.O_WRONLY | os.O_NONBLOCK | _CLOEXEC | (os.O_APPEND if append else 0)
        try:
            fd = os.open(target, flags, 0o666)  # a FIFO nobody reads: ENXIO at once, instead of waiting for a reader
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise UsageError(f"{target} is a FIFO nobody is reading; start its reader, or name a file") from None
            raise
        with open(fd, "wb") as handle:  # a buffered writer writes it all, however little each write takes
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            handle.write(data)
    except OSError as exc:
        raise os_error(exc, f"write {target}") from None


def os_error(exc: OSError, what: str, fallback: type[StatefileError] = UsageError) -> StatefileError:
    """The error for an OSError that stopped ``what`` ("write x"): a full or read-only disk is EnvironmentFailure."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        # Files are replaced whole (archive parts before the state file): the one that failed is as it was.
        return EnvironmentFailure(f"cannot {what}: the disk is full ({exc.strerror}); free space, then run the "
                                  "command again — the file it failed on is unchanged")  # fmt: skip
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return EnvironmentFailure(f"cannot {what} ({exc.strerror}); make it readable and writable for this user "
                                  "(or work elsewhere), then run the command again")  # fmt: skip
    return fallback(f"cannot {what} ({exc.strerror}); check the folder exists and its permissions")


def fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in ``folder`` durable (POSIX); a no-op where folders cannot be opened or synced."""
    with contextlib.suppress(OSError):  # some platforms cannot open a folder, some file systems refuse its fsync
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
