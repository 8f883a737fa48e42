"""Reading a state file given by path (invalid UTF-8 is an error, never rewritten), and how large a file statefile
reads at all (:func:`read_limit` in bytes, :func:`line_limit` in lines).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from statefile.defaults import DEFAULT_MAX_BYTES
from statefile.errors import InvalidDataError, NotFoundError
from statefile.model.document import StateDocument, parse
from statefile.store.atomic import IMPORT_LIMIT, read_regular_file
from statefile.store.base import decode_text

#: Whatever the budget, files up to this size are read (a 10,000-iteration history is about 4 MB).
MIN_READ_LIMIT = 8 * 1024 * 1024
#: Above the floor, files up to this many budgets are read: far beyond anything an agent's edits produce.
READ_LIMIT_BUDGETS = 64


def read_limit(max_bytes: int) -> int:
    """The largest file statefile reads for a byte budget of ``max_bytes``: 64 budgets, at least 8 MiB."""
    return max(MIN_READ_LIMIT, READ_LIMIT_BUDGETS * max_bytes)


#: Whatever the budget, files of up to this many lines are read (the real files have a few hundred).
MIN_LINE_LIMIT = 20_000


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
