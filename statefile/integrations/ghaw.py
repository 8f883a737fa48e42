"""The gh-aw formats statefile meets, re-stated from their observed behaviour (no upstream code is used).

- **repo-memory's file-glob** (github/gh-aw-actions ``setup/js/glob_pattern_helpers.cjs`` ``globPatternToRegex``,
  identical in v0.65.6 and v0.72.0; the pattern list is split by ``push_repo_memory.cjs`` v0.65.6 line 239): a
  file reaches the memory branch only when its path relative to the memory folder matches one pattern.
- **repo-memory's patch-size rule** (``push_repo_memory.cjs`` v0.65.6 lines 388-429): the bytes of the lines a push
  adds may not exceed ``floor(max-patch-size × 1.2)``.
- **The agent output file** of safe outputs (``collect_ndjson_output.cjs``, same in v0.65.6 and v0.72.0):
  ``{"items": [{"type": …, …}], "errors": […]}``, which a custom safe-output job reads from ``$GH_AW_AGENT_OUTPUT``.
- **The values a custom safe-output job receives**: declared ``string`` inputs arrive sanitised (trimmed, HTML
  comments removed, URLs off the allow-list replaced by ``(host/redacted)``, ``@mentions`` wrapped in backticks;
  ``sanitize_content_core.cjs`` v0.65.6 ``sanitizeContentCore``), and an agent may send a number as a string.  The
  ``*_value`` helpers accept what survives that pipeline and say plainly what they cannot use.

Everything here is pure except :func:`read_agent_output`, which reads one file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

from statefile.errors import NotFoundError, UsageError
from statefile.jsontext import JsonError, parse_json
from statefile.store.atomic import read_regular_file

#: Where gh-aw clones a repo-memory: ``/tmp/gh-aw/repo-memory/{id}`` (the lock's ``MEMORY_DIR`` and
#: ``GH_AW_MEMORY_DIR``; the gh-aw docs' ``/tmp/gh-aw/repo-memory-{id}`` disagrees with the code).
REPO_MEMORY_ROOT = "/tmp/gh-aw/repo-memory"
#: The id of a repo-memory given as one object (what Autoloop uses): always ``default``.
DEFAULT_MEMORY_ID = "default"
#: repo-memory's defaults when the frontmatter names no limit (gh-aw v0.65.6: ``push_repo_memory.cjs`` lines 42-64).
DEFAULT_MAX_PATCH_SIZE = 10240
DEFAULT_MAX_FILE_COUNT = 100
#: The push job lets a patch run 20 % over ``max-patch-size`` before it aborts.
PATCH_OVERHEAD = 1.2


# -- file-glob ----------------------------------------------------------------------------------------------------


def split_globs(value: str | Iterable[str]) -> tuple[str, ...]:
    """The patterns of a ``file-glob`` setting as the push job sees them.

    The compiler joins a YAML list with single spaces into ``FILE_GLOB_FILTER``; the push job splits that on runs
    of whitespace and drops empty parts.  So ``["*.md", "*.json"]`` and ``"*.md *.json"`` are the same two
    patterns, and no pattern can contain a space.
    """
    joined = value if isinstance(value, str) else " ".join(value)
    return tuple(part for part in joined.split() if part)


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The anchored, case-sensitive regular expression gh-aw builds from one file-glob pattern.

    ``**`` matches anything (slashes included), ``*`` anything but ``/``; every other character is literal —
    ``?`` and ``[…]`` too (gh-aw escapes them instead of giving them their shell meaning).
    """
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("^" + "".join(out) + "$")


def glob_matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether repo-memory pushes ``path`` (relative to the memory folder, ``/``-separated) under ``patterns``.

    No patterns means no filter: every file is pushed (``FILE_GLOB_FILTER`` empty).
    """
    if not patterns:
        return True
    return any(glob_regex(pattern).match(path) for pattern in patterns)


# -- patch size ---------------------------------------------------------------------------------------------------


def effective_patch_limit(max_patch_size: int) -> int:
    """The added bytes at which the push job aborts: ``floor(max-patch-size × 1.2)`` (10240 → 12288).

    Python's float arithmetic is the same IEEE-754 arithmetic as the job's JavaScript, so the floor agrees.
    """
    return math.floor(max_patch_size * PATCH_OVERHEAD)


def patch_added_bytes(diff: str) -> int:
    """What the push job counts for a ``git diff --cached`` text: each line starting with ``+`` but not ``+++``
    costs its UTF-8 length plus one (the newline); everything else costs nothing.

    So an added content line costs its own bytes + 2 (the ``+`` and the newline), and a content line that itself
    starts with ``++`` is not counted at all (it shows up as ``+++…``) — the job's quirk, kept.
    """
    total = 0
    for line in diff.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            total += len(line.encode("utf-8", "surrogateescape")) + 1
    return total


def added_lines_bytes(lines: Iterable[str]) -> int:
    """The push job's count for ``lines`` (without their line ends) all being added: ``+`` + text + newline each."""
    total = 0
    for line in lines:
        diff_line = "+" + line
        if not diff_line.startswith("+++"):
            total += len(diff_line.encode("utf-8", "surrogateescape")) + 1
    return total


# -- agent output -------------------------------------------------------------------------------------------------


def tool_type(job_id: str) -> str:
    """The item ``type`` (and, lower-cased, the tool name) gh-aw derives from a custom job's id: ``-`` → ``_``."""
    return job_id.replace("-", "_")


@dataclass(frozen=True)
class AgentOutput:
    """The validated agent output: items in call order and the ingestion errors (items gh-aw dropped)."""

    items: tuple[Mapping[str, Any], ...]
    errors: tuple[str, ...] = field(default=())

    def of_type(self, item_type: str) -> list[Mapping[str, Any]]:
        """The items whose ``type`` is ``item_type`` (compared with ``-`` as ``_``), in order."""
        wanted = tool_type(item_type)
        return [item for item in self.items if tool_type(str(item.get("type", ""))) == wanted]


def parse_agent_output(text: str, source: str) -> AgentOutput:
    """The agent output in ``text`` (from ``source``, for messages); UsageError when it is not that shape."""
    try:
        data = parse_json(text)
    except JsonError as exc:
        raise UsageError(f"{source} is not JSON gh-aw writes ({exc}); pass $GH_AW_AGENT_OUTPUT") from None
    if not isinstance(data, dict):
        raise UsageError(f"{source} is not a gh-aw agent output (a JSON object with 'items'); pass $GH_AW_AGENT_OUTPUT")
    items = data.get("items", [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise UsageError(
            f"{source}: 'items' must be a list of objects; pass the file gh-aw wrote ($GH_AW_AGENT_OUTPUT)"
        )
    errors = data.get("errors", [])
    return AgentOutput(tuple(items), tuple(str(e) for e in errors) if isinstance(errors, list) else ())


#: The largest agent output read: gh-aw's own limits keep a run's output far below this.
AGENT_OUTPUT_LIMIT = 32 * 1024 * 1024


def read_agent_output(path: Path) -> AgentOutput:
    """Read and parse the agent output file; NotFoundError / UsageError with one line when it cannot."""
    try:
        data = read_regular_file(path, limit=AGENT_OUTPUT_LIMIT, what="the agent output")
    except FileNotFoundError:
        raise NotFoundError(
            f'{path}: no agent output file; in a safe-output job pass "$GH_AW_AGENT_OUTPUT" (gh-aw sets it)'
        ) from None
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read the agent output ({exc.strerror}); check the path") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text; pass the JSON file gh-aw wrote ($GH_AW_AGENT_OUTPUT)") from None
    return parse_agent_output(text, str(path))


# -- input values as they arrive ------------------------------------------------------------------------------------

# What the sanitiser leaves of a URL it refused: "(host/redacted)" or "(redacted)".
_REDACTED = re.compile(r"\((?:[\w.…-]*/)?redacted\)")
_NONE_WORDS = {"", "-", "—", "none", "null", "n/a", "na"}
_PR_URL = re.compile(r"/pull/(\d+)(?:\D|$)")
_NUMBER_REF = re.compile(r"^(?:pr|pull request|issue)?\s*#?\s*(\d+)$", re.I)


class InputError(UsageError):
    """One input of an item cannot be used (the item is reported and skipped; the others still land)."""


def text_value(item: Mapping[str, Any], name: str) -> str | None:
    """A text input: stripped, ``None`` when absent or empty.  Numbers are accepted as their text."""
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"{name} must be text, got {type(value).__name__}")
    return value.strip() or None


def lines_value(item: Mapping[str, Any], name: str) -> list[str]:
    """A list input: a JSON list of strings, or one string with one entry per line (bullets' ``- `` removed)."""
    value = item.get(name)
    if value is None:
        return []
    raw = value if isinstance(value, list) else str(value).splitlines() if isinstance(value, str) else None
    if raw is None:
        raise InputError(f"{name} must be text or a list of texts, got {type(value).__name__}")
    out = []
    for entry in raw:
        if not isinstance(entry, (str, int, float)) or isinstance(entry, bool):
            raise InputError(f"{name} must hold texts, got {type(entry).__name__}")
        text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", str(entry)).strip()
        if text and text.lower() not in _NONE_WORDS:
            out.append(text)
    return out


def number_value(item: Mapping[str, Any], name: str) -> Decimal | None:
    """A number input: a JSON number, or a string holding one (``"0.93"``, ``" 1,234.5 "``, ``"`12`"``)."""
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number, got {str(value).lower()}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{name} must be a finite number, got {value}")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise InputError(f"{name} must be a number, got {type(value).__name__}")
    text = value.strip().strip("`").strip().replace("_", "")
    if text.lower() in _NONE_WORDS:
        return None
    if re.fullmatch(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?", text):
        text = text.replace(",", "")
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise InputError(f"{name} {value!r} is not a number") from None
    if not number.is_finite():
        raise InputError(f"{name} {value!r} is not a finite number")
    return number


def count_value(item: Mapping[str, Any], name: str) -> int | None:
    """A whole-number input (0 or more), from a JSON number or a string."""
    number = number_value(item, name)
    if number is None:
        return None
    if number != number.to_integral_value() or number < 0:
        raise InputError(f"{name} must be a whole number of 0 or more, got {item.get(name)!r}")
    return int(number)


def reference_value(item: Mapping[str, Any], name: str) -> tuple[int | None, str | None]:
    """A pull request or issue reference: ``12``, ``"#12"``, ``"PR #12"`` or a ``…/pull/12`` URL.

    Returns ``(number, warning)``.  A URL the sanitiser redacted (its host was not on the allow-list) cannot be
    read back: the number is ``None`` and the warning says so, so the rest of the item still lands.
    """
    value = item.get(name)
    if value is None or isinstance(value, bool):
        return None, None
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not value.is_integer():
            raise InputError(f"{name} must be a number such as 12 or '#12', got {value}")
        if value < 1:
            raise InputError(f"{name} must be a positive number, got {value}")
        return int(value), None
    if not isinstance(value, str):
        raise InputError(f"{name} must be a number such as 12 or '#12', got {type(value).__name__}")
    text = value.strip().strip("`").strip()
    if text.lower() in _NONE_WORDS:
        return None, None
    match = _NUMBER_REF.match(text) or _PR_URL.search(text)
    if match:
        number = int(match.group(1))
        if number < 1:
            raise InputError(f"{name} must be a positive number, got {value!r}")
        return number, None
    if _REDACTED.search(text):
        return None, f"{name} {value!r} was redacted by gh-aw's sanitiser (its host is not allowed); pass the number"
    raise InputError(f"{name} {value!r} is not a number such as 12, '#12' or a pull request URL")


__all__ = [
    "DEFAULT_MAX_FILE_COUNT",
    "DEFAULT_MAX_PATCH_SIZE",
    "DEFAULT_MEMORY_ID",
    "PATCH_OVERHEAD",
    "REPO_MEMORY_ROOT",
    "AgentOutput",
    "InputError",
    "added_lines_bytes",
    "count_value",
    "effective_patch_limit",
    "glob_matches",
    "glob_regex",
    "lines_value",
    "number_value",
    "parse_agent_output",
    "patch_added_bytes",
    "read_agent_output",
    "reference_value",
    "split_globs",
    "text_value",
    "tool_type",
]
