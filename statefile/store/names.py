"""Validation of every name that reaches a path or a git command: a hostile or mistyped name fails with one line
instead of becoming a path traversal, a git option or a malformed ref."""

from __future__ import annotations

import re
from collections.abc import Iterable

from statefile.defaults import SHARED_PROGRAM
from statefile.errors import UsageError

MAX_PROGRAM_LENGTH = 100
MAX_BRANCH_LENGTH = 255
MAX_PATH_LENGTH = 1024
#: The longest name a checkout can write (Linux's NAME_MAX; APFS and NTFS hold 255 too): a git tree holds longer.
MAX_COMPONENT_BYTES = 255

PROGRAM_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# What git check-ref-format refuses anywhere in a ref: ASCII controls, space and ~ ^ : ? * [ \ (and DEL).
_REF_BAD_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_PATH_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
_IDENTITY_RE = re.compile(r"\s*([^<>\n\x00]*?)\s*<([^<>\s\x00]+)>\s*")
# HEAD and its pseudo-refs (FETCH_HEAD, ORIG_HEAD, …): a branch of such a name makes git's own one ambiguous.
_PSEUDO_REF = re.compile(r"(?:[A-Z_]*_)?HEAD|AUTO_MERGE")
# scheme://… for the transports git speaks natively, and scp-like user@host:path.
_URL_RE = re.compile(r"(?i)(?:https?|ssh|git|file)://[^\s]+|[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^\s]+")
# Code points HFS+ ignores in file names: ".git" with one of them inside is ".git" on a Mac.
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
# NTFS 8.3 short names (GIT~1 is .git, GITMOD~1 and gi7eba~1 are .gitmodules): any "~digit" is refused.
_SHORT_NAME = re.compile(r"~[0-9]")
# A part name as archive.part_number reads it, with its length capped so a name cannot grow without bound.
_PART_RE = re.compile(r"\d{4,9}\.md")
# Names Windows reserves for devices, whatever the extension (CON, CON.md, con.x.md): no file can have them there.
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{port}{n}" for port in ("com", "lpt") for n in [*"0123456789", "¹", "²", "³"]]
)


def _first(*checks: tuple[bool, str]) -> str:
    return next((why for bad, why in checks if bad), "")


def _valid(name: str, reason: str, what: str, advice: str) -> str:
    if reason:
        raise UsageError(f"invalid {what} {name!r}: {reason}; {advice}")
    return name


def validate_program(name: str) -> str:
    """Return ``name`` if it is a safe program name, else raise :class:`UsageError` saying why."""
    reason = "" if name == SHARED_PROGRAM else _program_problem(name)
    advice = f"use letters, digits, '.', '_' and '-', starting with a letter or digit (at most {MAX_PROGRAM_LENGTH} "
    return _valid(name, reason, "program name", advice + "characters)")


def is_program_name(name: str) -> bool:
    """True when ``name`` passes :func:`validate_program` (used to list programs without raising)."""
    return not _program_problem(name)


def _program_problem(name: object) -> str:
    if not isinstance(name, str) or not name:
        return "it is empty"
    device = f"{name.split('.')[0]!r} is a reserved device name on Windows (a checkout there could not hold it)"
    return _first(
        (len(name) > MAX_PROGRAM_LENGTH, f"it is {len(name)} characters long"),
        ("/" in name or "\\" in name, "it contains a path separator"),
        (".." in name, "it contains '..'"),
        (name[0] in ".-_", f"it starts with {name[0]!r}"),
        (not PROGRAM_RE.fullmatch(name), "it contains a character other than letters, digits, '.', '_' and '-'"),
        (name.lower().endswith(".md"), f"give the name without '.md' ({name[:-3]!r})"),
        (name.endswith("."), "it ends with '.'"),
        (windows_reserved(name), device),
    )


def windows_reserved(name: str) -> bool:
    """Whether ``name`` (a file or folder name) is a device name on Windows, such as ``con`` or ``NUL.md``."""
    return name.split(".")[0].rstrip(" ").lower() in _WINDOWS_DEVICES


def validate_branch(name: str) -> str:
    """Return ``name`` if ``refs/heads/{name}`` is a valid ref (git check-ref-format rules), else raise UsageError."""
    bare = name.removeprefix("refs/heads/") if isinstance(name, str) else name
    reason = _ref_problem(name, allow_slash=True) or _first(
        (bool(_PSEUDO_REF.fullmatch(name)), f"refs/heads/{name} would make git's {name} ambiguous"),
        (name.startswith("refs/"), f"give the branch name without 'refs/' ({bare!r}), or refs/heads/{name} is made"),
    )
    return _valid(name, reason, "branch name", "use a git branch name such as memory/autoloop")


def validate_remote(name: str) -> str:
    """Return ``name`` if it is a plausible remote name (one ref component) or a remote URL, else raise UsageError."""
    reason = "" if is_remote_url(name) else _ref_problem(name, allow_slash=False)
    advice = "pass the name of a configured remote (origin) or a URL (https://github.com/OWNER/REPO.git)"
    return _valid(name, reason, "remote name", advice)


def is_remote_url(text: object) -> bool:
    """Whether ``text`` is a remote URL statefile accepts in place of a remote's name."""
    if not isinstance(text, str) or not text or len(text) > MAX_PATH_LENGTH or "::" in text:
        return False
    return not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text) and bool(_URL_RE.fullmatch(text))


def _ref_problem(name: object, *, allow_slash: bool) -> str:
    if not isinstance(name, str) or not name:
        return "it is empty"
    bad = _REF_BAD_CHARS.search(name)
    return _first(
        (len(name) > MAX_BRANCH_LENGTH, f"it is {len(name)} characters long"),
        (name.startswith("-"), "it starts with '-'"),
        (bad is not None, f"it contains {bad.group(0) if bad else ''!r}"),
        (".." in name, "it contains '..'"),
        ("@{" in name, "it contains '@{'"),
        (name == "@", "it is '@'"),
        (name.endswith("."), "it ends with '.'"),
        (not allow_slash and "/" in name, "it contains '/'"),
        *(
            check
            for part in name.split("/")
            for check in (
                (not part, "it has an empty path component ('//' or a leading or trailing '/')"),
                (part.startswith("."), f"component {part!r} starts with '.'"),
                (part.endswith(".lock"), f"component {part!r} ends with '.lock'"),
            )
        ),
    )


def validate_path(path: str) -> str:
    """Return ``path`` if it is a safe relative file path inside a store (``archive/perf/0001.md``), else raise."""
    return _valid(path, _path_problem(path), "file path", "use a relative path like archive/perf/0001.md")


def _path_problem(path: object) -> str:
    if not isinstance(path, str) or not path:
        return "it is empty"
    bad = _PATH_BAD_CHARS.search(path)
    return _first(
        (len(path) > MAX_PATH_LENGTH, f"it is {len(path)} characters long"),
        (bad is not None, f"it contains {bad.group(0) if bad else ''!r}"),
        *(check for part in path.split("/") for check in _component_checks(part)),
    )


def _component_checks(part: str) -> tuple[tuple[bool, str], ...]:
    """Why a path component is refused, or could stand for another name on some file system (``.git`` above all)."""
    try:
        size = len(part.encode("utf-8", "surrogateescape"))  # an undecodable byte read as a lone surrogate is one byte
    except UnicodeEncodeError:  # a surrogate no byte stands for: as long as it would be written with surrogatepass
        size = len(part.encode("utf-8", "surrogatepass"))
    it = f"component {part!r}"
    big = f"a component is {size:,} bytes long, more than the {MAX_COMPONENT_BYTES} a file system holds"
    return (
        (not part, "it has an empty component (a leading, trailing or double '/')"),
        (part in (".", ".."), f"it contains {part!r}"),
        (size > MAX_COMPONENT_BYTES, big),
        (part[:1] in (".", "-"), f"{it} starts with {part[:1]!r}"),
        (_HFS_IGNORED.search(part) is not None, f"{it} contains a character that macOS file systems ignore"),
        (":" in part, f"{it} contains ':' (a stream name on Windows)"),
        (_SHORT_NAME.search(part) is not None, f"{it} looks like a Windows short name ('~' and a digit, as in GIT~1)"),
        (part[-1:] in (" ", "."), f"{it} ends with {part[-1:]!r}, which Windows drops"),
        (windows_reserved(part), f"{it} is a reserved device name on Windows"),
    )


def case_twins(paths: Iterable[str], existing: Iterable[str] = ()) -> list[tuple[str, str]]:
    """Pairs ``(name, other)`` where a name in ``paths`` (or a folder on its way, with a final ``/``) differs only in
    case from another one of ``paths`` or ``existing``: ``PERF.md`` beside ``perf.md``, ``Archive/`` by ``archive/``."""
    present = {name for path in existing for name in _prefixes(path)}
    spelled: dict[str, str] = {}
    for name in sorted(present):
        spelled.setdefault(name.rstrip("/").lower(), name)
    twins: list[tuple[str, str]] = []
    for path in sorted(paths):
        for name in _prefixes(path):
            other = name if name in present else spelled.setdefault(name.rstrip("/").lower(), name)
            if other != name:
                twins.append((name, other))
                break
    return twins


def _prefixes(path: str) -> list[str]:
    """``a/``, ``a/b/``, ``a/b/c.md`` for ``a/b/c.md``: every folder on the way (with its ``/``), then the path."""
    parts = path.split("/")
    return [*("/".join(parts[: end + 1]) + "/" for end in range(len(parts) - 1)), path]


def parse_identity(text: str) -> tuple[str, str]:
    """Split ``"Name <email>"`` into ``(name, email)``; raise UsageError when it is not that shape."""
    match = _IDENTITY_RE.fullmatch(text)
    if not match or not match.group(1):
        raise UsageError(f"invalid author {text!r}; write it as 'Name <email@example.com>'")
    return match.group(1), match.group(2)


def validate_part(part: str) -> str:
    """Return ``part`` if it is an archive part file name (``0001.md``), else raise UsageError."""
    if not isinstance(part, str) or not _PART_RE.fullmatch(part):
        raise UsageError(f"invalid archive part {part!r}; part names look like 0001.md (see archive_parts())")
    return part
