"""Atomic file replacement, the one way statefile writes files outside git: temp file, fsync, rename, fsync dir.

A reader (or a crash) sees the old file or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


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


def fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in ``folder`` durable (POSIX); a no-op where folders cannot be opened or synced."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover - platform dependent
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on directories
        pass
    finally:
        os.close(fd)
