"""Reading a state file given by path (the file-mode commands): invalid UTF-8 is an error, never rewritten."""

from __future__ import annotations

from pathlib import Path

from statefile.document import StateDocument, parse
from statefile.errors import InvalidDataError, NotFoundError


def read_text_file(path: Path) -> str:
    """The UTF-8 text of ``path``; a clear error when it is missing, unreadable or not UTF-8."""
    try:
        if path.exists() and not path.is_file() and not path.is_dir():
            # A FIFO or device would block or stream forever.
            raise NotFoundError(f"{path}: not a regular file; pass the path of a state file")
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        raise NotFoundError(f"{path}: is a folder, not a state file") from None
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read ({exc.strerror}); check the path and permissions") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(
            f"{path}: not valid UTF-8 (byte {exc.start}); re-save it as UTF-8 — statefile will not rewrite it"
        ) from None


def read_state_file(path: Path) -> StateDocument:
    """Parse the state file at ``path``."""
    return parse(read_text_file(path))
