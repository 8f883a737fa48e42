"""Export every file of the memory as one JSON document, and read it back byte for byte (or refuse).

Version 1: ``{"format": "statefile-export", "version": 1, "branch", "commit", "files": {path: {"text" or "base64"
(not UTF-8), "bytes", "sha256" (of the bytes)}}}``; unknown keys are ignored, a higher version refused."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from statefile.errors import UsageError
from statefile.jsontext import JsonError, parse_json
from statefile.model.text import encode
from statefile.numbers import size_text
from statefile.store.names import validate_path

FORMAT = "statefile-export"
VERSION = 1
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def check_path(path: object) -> str:
    """``path`` if it is a safe relative store path, else :class:`UsageError` saying why."""
    if not isinstance(path, str) or not path:
        raise UsageError(f"bad file path {path!r} in export; paths are non-empty strings")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise UsageError(f"absolute path {path!r} in export; only paths relative to the branch root are allowed")
    if "\\" in path:
        raise UsageError(f"backslash in path {path!r}; use forward slashes")
    if any(ord(ch) < 32 or ord(ch) == 127 or "\ud800" <= ch <= "\udfff" for ch in path):
        raise UsageError(f"control or undecodable character in path {path!r}")
    segments = path.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        raise UsageError(f"path {path!r} has an empty, '.' or '..' segment; give a plain relative path")
    if segments[0] == ".git":
        raise UsageError(f"path {path!r} is inside .git; it cannot be imported")
    # The stores' own rule, which also refuses every alias of .git and .gitmodules (GIT~1, .git., .GIT, …).
    return validate_path(path)


def export_json(files: Mapping[str, str], *, branch: str, commit: str | None) -> dict[str, Any]:
    """The export document for ``files`` (store path → text as statefile reads it), paths sorted."""
    import hashlib  # here: OpenSSL is loaded by export and import only, not by every write command importing this

    out: dict[str, Any] = {}
    for path in sorted(files):
        data = encode(files[path])
        try:
            entry = {"text": data.decode("utf-8")}
        except UnicodeDecodeError:
            entry = {"base64": base64.b64encode(data).decode("ascii")}
        out[check_path(path)] = {**entry, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return {"format": FORMAT, "version": VERSION, "branch": branch, "commit": commit, "files": out}


def import_json(data: Any) -> dict[str, str]:
    """Validate an export document and return its files (store path → text, undecodable bytes as surrogates)."""
    if not isinstance(data, dict):
        raise UsageError("not a statefile export: the JSON must be an object; export one with `statefile export`")
    if data.get("format") != FORMAT:
        raise UsageError(f"not a statefile export: format is {data.get('format')!r}, expected {FORMAT!r}")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"export version {version!r} is not valid (it is not a number ≥ 1); the file is damaged")
    if version > VERSION:
        raise UsageError(f"export version {version} is newer than this statefile reads ({VERSION}); upgrade statefile")
    files = data.get("files")
    if not isinstance(files, dict):
        raise UsageError("export has no 'files' object; the file is damaged")
    return {check_path(path): _bytes(path, entry).decode("utf-8", "surrogateescape") for path, entry in files.items()}


def _bytes(path: str, entry: Any) -> bytes:
    import hashlib  # see export_json

    if not isinstance(entry, dict):
        raise UsageError(f"{path}: entry is not an object; the export is damaged")
    has_text, has_b64 = "text" in entry, "base64" in entry
    if has_text == has_b64:
        raise UsageError(f"{path}: needs exactly one of 'text' or 'base64'; the export is damaged")
    if has_text:
        text = entry["text"]
        if not isinstance(text, str):
            raise UsageError(f"{path}: 'text' is not a string; the export is damaged")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{path}: 'text' holds unpaired surrogates; such files must be base64") from None
    else:
        try:
            data = base64.b64decode(entry["base64"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise UsageError(f"{path}: 'base64' is not valid base64; the export is damaged") from None
    digest = entry.get("sha256")
    if not isinstance(digest, str) or not _SHA256.match(digest):
        raise UsageError(f"{path}: missing or malformed sha256; the export is damaged")
    if hashlib.sha256(data).hexdigest() != digest:
        raise UsageError(f"{path}: checksum mismatch; the export was edited or damaged, export it again")
    size = entry.get("bytes")
    if size is not None and size != len(data):
        raise UsageError(f"{path}: size {size_text(len(data))} does not match the recorded {size}; it is damaged")
    return data


def dumps(data: Mapping[str, Any]) -> str:
    """An export document as JSON text (UTF-8 friendly, indented, stable key order, final newline)."""
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def loads(text: str) -> Any:
    """Parse export JSON text, turning a syntax error into a one-line :class:`UsageError`."""
    try:
        return parse_json(text, max_digits=18)
    except JsonError as exc:
        raise UsageError(f"not valid JSON ({exc}); is this a statefile export?") from None
