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
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from statefile.defaults import MAX_EXPONENT, MAX_GITHUB_NUMBER
from statefile.errors import NotFoundError, UsageError
from statefile.jsontext import JsonError, parse_json
from statefile.model.anomalies import plausible
from statefile.model.patterns import PIN_PATTERN
from statefile.numbers import number_text
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
        data = parse_json(text, big_numbers_as_text=True)
    except JsonError as exc:
        if exc.too_deep:
            # It is the right file: one value in it (an undeclared input gh-aw passes on as the agent wrote it) is
            # nested deeper than Python's parser goes, so no item of it can be read.
            raise UsageError(
                f"{source}: a value is nested thousands of levels deep, so no item could be read and nothing was "
                "recorded; check what the agent reported"
            ) from None
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
# Digits are ASCII digits: Python's int() and Decimal() also read Arabic-Indic, Devanagari … digits, which no
# metric, count or GitHub number is written in, and which a reader of the file would not take for a number.
_PR_URL = re.compile(r"/pull/([0-9]{1,10})(?![0-9])")
_NUMBER_REF = re.compile(r"(?:pr|pull request|issue)?\s*#?\s*([0-9]{1,10})", re.I)
# A number as an agent writes one: at most 40 digits on each side of the point and an exponent of at most 4 digits,
# so that converting it is always cheap (Decimal("1e999999999") is instant, but int() of it never ends).
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][+-]?[0-9]{1,4})?")
_GROUPED = re.compile(r"[+-]?[0-9]{1,3}(?:,[0-9]{3}){1,13}(?:\.[0-9]{1,40})?")
_COUNT_TEXT = re.compile(r"[0-9]{1,9}")
_WORDLIKE = re.compile(r"[^\W_]")


class InputError(UsageError):
    """One input of an item cannot be used (the item is reported and skipped; the others still land)."""


@dataclass(frozen=True)
class TextLimit:
    """How much of one text input is kept: ``bytes`` of UTF-8 per line, and at most ``lines`` lines."""

    bytes: int
    lines: int = 1


#: The caps on every text an agent reports, by input name: the one place to change them.  A single-line input
#: longer than its cap is cut (marked ``…``) and the item still lands, with a warning; list inputs (one entry per
#: line) keep their first ``lines`` entries, each cut to ``bytes``.  They bound what one report can add to the
#: state file, so a hostile or runaway agent can neither fill the file nor push the maintainers' text out of the
#: next agent's view.
AGENT_TEXT_LIMITS: dict[str, TextLimit] = {
    "program": TextLimit(100),
    "status": TextLimit(40),
    "metric": TextLimit(100),
    "change": TextLimit(300),
    "notes": TextLimit(1000),
    "commit": TextLimit(64),
    "pr": TextLimit(300),
    "issue": TextLimit(300),
    "ci_fix_attempts": TextLimit(20),
    "pause_reason": TextLimit(300),
    "lessons": TextLimit(300, 5),
    "future_directions": TextLimit(300, 5),
    "foreclosed_avenues": TextLimit(300, 5),
}
#: Any other input (an older or misspelt name): bounded all the same.
DEFAULT_TEXT_LIMIT = TextLimit(300, 5)
#: The most of a raw value any step looks at: a 5 MB value is cut to this before it is cleaned, so every pass over
#: it is bounded (the caps above are far smaller; this only keeps the work linear in what is kept).
_RAW_SCAN = 64 * 1024

# Terminal escape sequences: CSI (ESC [ … final, or the one-byte C1 CSI), OSC and other strings (ESC ] … BEL or
# ST), and two-character escapes.  Removed whole, so no "[31m" is left behind as text.
_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
# C0 controls but tab and newline, DEL, C1 controls, and the invisible characters that reorder or hide text
# (bidi embeddings, overrides and isolates, marks, the BOM): "Trojan Source" text reads one way and is another.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# What makes a bullet protected from pruning or shown first (policy.pruning): a pin and "important" emphasis.
_PIN_MARK = re.compile(PIN_PATTERN, re.I)
_IMPORTANT_WORD = re.compile(r"\b(IMPORTANT|CRITICAL)\b")
_IMPORTANT_EMPHASIS = re.compile(r"\*\*(\s*)(?i:(important|critical))\b(\s*:?)(?:\s*\*\*)?")
# Each pass of clean_text is linear; a handful covers every join one removal can make.
_CLEAN_PASSES = 4


def clean_text(value: str) -> str:
    """Agent text made inert: data, never structure, authority or terminal control.

    Removes terminal escape sequences and control characters (newline and tab are kept; a carriage return is a
    newline), bidi and other invisible formatting characters, HTML comments (a comment is invisible on GitHub and
    could carry statefile's own item marker or a ``<!-- pin -->``), pin markers and the emphasis that marks a
    lesson important (``IMPORTANT``, ``CRITICAL``, ``**Important**``), so agent text can never make itself
    protected; lone surrogates (which JSON allows) become U+FFFD.  Linear in the length of ``value``.

    Removing one thing can join the pieces around it into another (``<📌!--`` becomes ``<!--`` once the pin is
    gone), so the passes repeat until nothing changes; a text built to need more passes than that has what is left
    of its comment openers broken up instead.
    """
    text = _SURROGATE.sub("\ufffd", value).replace("\r\n", "\n").replace("\r", "\n")
    for _ in range(_CLEAN_PASSES):
        before = text
        text = _PIN_MARK.sub("", _CONTROLS.sub("", _ANSI.sub("", text)))
        text = _drop_comments(text)
        text = _IMPORTANT_EMPHASIS.sub(lambda m: m.group(1) + m.group(2).lower() + m.group(3), text)
        text = _IMPORTANT_WORD.sub(lambda m: m.group(1).lower(), text)
        if text == before:
            return text
    return _PIN_MARK.sub("", text.replace("<!", "< !"))


def _drop_comments(text: str) -> str:
    """``text`` without its HTML comments, in one left-to-right pass (a regular expression such as
    ``<!--.*?-->`` rescans to the end for every opener that is never closed: quadratic in hostile text).

    An opener with no ``-->`` after it loses only the opener (the text after it is the agent's words, kept); a
    ``-->`` left without its opener goes too, so nothing of a comment remains.
    """
    out: list[str] = []
    at = 0
    while (start := text.find("<!--", at)) >= 0:
        out.append(text[at:start])
        end = text.find("-->", start + 4)
        if end < 0:
            out.append(text[start + 4 :])
            at = len(text)
            break
        at = end + 3
    out.append(text[at:])
    return "".join(out).replace("<!--", "").replace("-->", "")


def cut_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes on a character boundary, ``…`` marking a cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: max(0, limit - 3)].decode("utf-8", "ignore").rstrip() + "…"


def _limit(name: str) -> TextLimit:
    return AGENT_TEXT_LIMITS.get(name, DEFAULT_TEXT_LIMIT)


def _raw(item: Mapping[str, Any], name: str) -> str | None:
    """The input ``name`` as text before cleaning: numbers as their text, ``None`` when absent."""
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"{name} must be text, got {type(value).__name__}")
    return value


def text_value(item: Mapping[str, Any], name: str, warnings: list[str] | None = None) -> str | None:
    """A one-line text input: cleaned (:func:`clean_text`), whitespace folded, cut to its cap
    (:data:`AGENT_TEXT_LIMITS`, a warning added to ``warnings``); ``None`` when absent or empty."""
    raw = _raw(item, name)
    if raw is None:
        return None
    text = " ".join(clean_text(raw[:_RAW_SCAN]).split())
    limit = _limit(name).bytes
    kept = cut_bytes(text, limit)
    if warnings is not None and (kept != text or len(raw) > _RAW_SCAN):
        warnings.append(f"{name} was cut to {limit:,} bytes (it had {len(raw.encode('utf-8', 'replace')):,})")
    return kept or None


def lines_value(item: Mapping[str, Any], name: str, warnings: list[str] | None = None) -> list[str]:
    """A list input: a JSON list of strings, or one string with one entry per line (bullets' ``- `` removed);
    each entry cleaned and cut, at most the cap's number of entries (a warning says what was left out)."""
    value = item.get(name)
    if value is None:
        return []
    if isinstance(value, str):
        raw: list[Any] = clean_text(value[:_RAW_SCAN]).split("\n")
    elif isinstance(value, list):
        raw = value
    else:
        raise InputError(f"{name} must be text or a list of texts, got {type(value).__name__}")
    limit = _limit(name)
    out: list[str] = []
    cut = dropped = 0
    for entry in raw:
        if not isinstance(entry, (str, int, float)) or isinstance(entry, bool):
            raise InputError(f"{name} must hold texts, got {type(entry).__name__}")
        text = " ".join(clean_text(str(entry)[:_RAW_SCAN]).split())
        text = re.sub(r"^(?:[-*+]|[0-9]{1,9}[.)])\s+", "", text).strip()
        if not text or text.lower() in _NONE_WORDS or not _WORDLIKE.search(text):
            continue  # nothing left to read (what was there was a comment, a pin, markup)
        if len(out) >= limit.lines:
            dropped += 1
            continue
        kept = cut_bytes(text, limit.bytes)
        cut += kept != text
        out.append(kept)
    if warnings is not None and (dropped or cut or (isinstance(value, str) and len(value) > _RAW_SCAN)):
        warnings.append(
            f"{name}: kept the first {limit.lines} entries of at most {limit.bytes:,} bytes each"
            + (f" ({dropped:,} more left out)" if dropped else "")
        )
    return out


def number_value(item: Mapping[str, Any], name: str) -> Decimal | None:
    """A number input: a JSON number, or a string holding one (``"0.93"``, ``" 1,234.5 "``, ``"`12`"``).

    Only ASCII digits, at most 40 on each side of the point, an exponent of at most four digits, and a magnitude
    within 1e±308: checked on the text before anything converts it.
    """
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number, got {str(value).lower()}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{name} must be a finite number, got {value}")
        return Decimal(repr(value))
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        raise InputError(f"{name} must be a number, got {type(value).__name__}")
    shown = cut_bytes(" ".join(clean_text(text[:200]).split()), 60)
    text = text.strip().strip("`").strip().replace("_", "")
    if text.lower() in _NONE_WORDS:
        return None
    if len(text) <= 200 and _GROUPED.fullmatch(text):
        text = text.replace(",", "")
    if len(text) > 200 or not _NUMBER_TEXT.fullmatch(text):
        raise InputError(
            f"{name} {shown!r} is not a number (ASCII digits, at most 40 before and after the point, an exponent of "
            "at most 4 digits); "
            "report the measured value, such as 0.93"
        )
    number = Decimal(text)
    if not plausible(number):
        raise InputError(f"{name} {shown!r} is beyond 1e±{MAX_EXPONENT}; report the measured value")
    return number


def count_value(item: Mapping[str, Any], name: str, *, maximum: int = 1000) -> int | None:
    """A whole-number input from 0 to ``maximum``, from a JSON number or a string of ASCII digits."""
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().strip("`").strip()
        if text.lower() in _NONE_WORDS:
            return None
        if not _COUNT_TEXT.fullmatch(text):
            shown = cut_bytes(" ".join(clean_text(value[:200]).split()), 60)
            raise InputError(f"{name} must be a whole number from 0 to {maximum:,}, got {shown!r}")
        count = int(text)
    else:
        number = number_value(item, name)
        if number is None:
            return None
        if number != number.to_integral_value() or not 0 <= number <= maximum:
            raise InputError(f"{name} must be a whole number from 0 to {maximum:,}, got {value!r}")
        count = int(number)
    if count > maximum:
        raise InputError(f"{name} must be a whole number from 0 to {maximum:,}, got {count:,}")
    return count


def reference_value(item: Mapping[str, Any], name: str) -> tuple[int | None, str | None]:
    """A pull request or issue reference: ``12``, ``"#12"``, ``"PR #12"`` or a ``…/pull/12`` URL.

    Returns ``(number, warning)``.  A URL the sanitiser redacted (its host was not on the allow-list) cannot be
    read back: the number is ``None`` and the warning says so, so the rest of the item still lands.
    """
    value = item.get(name)
    if value is None or isinstance(value, bool):
        return None, None
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise InputError(f"{name} must be a number such as 12 or '#12', got {value}")
        if not 1 <= value <= MAX_GITHUB_NUMBER:
            raise InputError(f"{name} must be a number from 1 to {MAX_GITHUB_NUMBER:,}, got {number_text(int(value))}")
        return int(value), None
    if not isinstance(value, str):
        raise InputError(f"{name} must be a number such as 12 or '#12', got {type(value).__name__}")
    # Whitespace folded first: the reference pattern's optional parts between runs of spaces would otherwise
    # backtrack quadratically on a long run of them.
    text = " ".join(value[:_RAW_SCAN].split()).strip("`").strip()
    shown = cut_bytes(" ".join(clean_text(text[:200]).split()), 60)
    if text.lower() in _NONE_WORDS:
        return None, None
    match = _NUMBER_REF.fullmatch(text) or _PR_URL.search(text)
    if match:
        number = int(match.group(1))
        if not 1 <= number <= MAX_GITHUB_NUMBER:
            raise InputError(f"{name} must be a number from 1 to {MAX_GITHUB_NUMBER:,}, got {shown!r}")
        return number, None
    if _REDACTED.search(text):
        return None, f"{name} {shown!r} was redacted by gh-aw's sanitiser (its host is not allowed); pass the number"
    raise InputError(f"{name} {shown!r} is not a number such as 12, '#12' or a pull request URL")


__all__ = [
    "AGENT_TEXT_LIMITS",
    "DEFAULT_MAX_FILE_COUNT",
    "DEFAULT_MAX_PATCH_SIZE",
    "DEFAULT_MEMORY_ID",
    "PATCH_OVERHEAD",
    "REPO_MEMORY_ROOT",
    "AgentOutput",
    "InputError",
    "TextLimit",
    "added_lines_bytes",
    "clean_text",
    "count_value",
    "cut_bytes",
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
