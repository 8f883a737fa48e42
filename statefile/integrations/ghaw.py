"""The gh-aw formats statefile meets, re-stated from their observed behaviour (github/gh-aw-actions ``setup/js/``):
repo-memory's file-glob (``glob_pattern_helpers.cjs``) and patch-size rule (``push_repo_memory.cjs``), the agent
output file (``collect_ndjson_output.cjs``), and the input values a custom safe-output job receives."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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

#: Where gh-aw clones a repo-memory: ``/tmp/gh-aw/repo-memory/{id}`` (the lock's ``MEMORY_DIR``, not the docs').
REPO_MEMORY_ROOT = "/tmp/gh-aw/repo-memory"
#: The id of a repo-memory given as one object (what Autoloop uses): always ``default``.
DEFAULT_MEMORY_ID = "default"
#: repo-memory's defaults when the frontmatter names no limit (gh-aw v0.65.6: ``push_repo_memory.cjs`` lines 42-64).
DEFAULT_MAX_PATCH_SIZE = 10240
DEFAULT_MAX_FILE_COUNT = 100


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The anchored, case-sensitive expression gh-aw builds from one pattern: ``**`` matches anything, ``*``
    anything but ``/``, every other character is literal (``?`` and ``[…]`` too)."""
    parts = re.findall(r"\*\*|\*|[^*]+", pattern)
    return re.compile("^" + "".join({"**": ".*", "*": "[^/]*"}.get(p) or re.escape(p) for p in parts) + "$")


def glob_matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether repo-memory pushes ``path`` (relative, ``/``-separated) under ``patterns`` (none: no filter)."""
    return not patterns or any(glob_regex(pattern).match(path) for pattern in patterns)


def effective_patch_limit(max_patch_size: int) -> int:
    """The added bytes at which the push job aborts: ``floor(max-patch-size × 1.2)``, in the job's IEEE-754."""
    return math.floor(max_patch_size * 1.2)


def patch_added_bytes(diff: str) -> int:
    """What the push job counts for a ``git diff --cached`` text: each line starting with ``+`` but not ``+++``
    costs its UTF-8 length plus one; a content line starting with ``++`` is not counted at all (the job's quirk)."""
    added = (line for line in diff.split("\n") if line.startswith("+") and not line.startswith("+++"))
    return sum(len(line.encode("utf-8", "surrogateescape")) + 1 for line in added)


def tool_type(job_id: str) -> str:
    """The item ``type`` (and, lower-cased, the tool name) gh-aw derives from a custom job's id: ``-`` → ``_``."""
    return job_id.replace("-", "_")


@dataclass(frozen=True)
class AgentOutput:
    """The validated agent output: items in call order and the ingestion errors (items gh-aw dropped)."""

    items: tuple[Mapping[str, Any], ...]
    errors: tuple[str, ...] = ()

    def of_type(self, item_type: str) -> list[Mapping[str, Any]]:
        """The items whose ``type`` is ``item_type`` (compared with ``-`` as ``_``), in order."""
        wanted = tool_type(item_type)
        return [item for item in self.items if tool_type(str(item.get("type", ""))) == wanted]


def parse_agent_output(text: str, source: str) -> AgentOutput:
    """The agent output in ``text`` (from ``source``, for messages); UsageError when it is not that shape."""
    try:
        data = parse_json(text, big_numbers_as_text=True)
    except JsonError as exc:
        if exc.too_deep:  # the right file, but one value in it is nested deeper than Python's parser goes
            raise UsageError(f"{source}: a value is nested thousands of levels deep, so no item could be read and "
                             "nothing was recorded; check what the agent reported") from None  # fmt: skip
        raise UsageError(f"{source} is not JSON gh-aw writes ({exc}); pass $GH_AW_AGENT_OUTPUT") from None
    if not isinstance(data, dict):
        raise UsageError(f"{source} is not a gh-aw agent output (a JSON object with 'items'); pass $GH_AW_AGENT_OUTPUT")
    items = data.get("items", [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise UsageError(f"{source}: 'items' must be a list of objects; pass $GH_AW_AGENT_OUTPUT, the file gh-aw wrote")
    errors = data.get("errors", [])
    return AgentOutput(tuple(items), tuple(str(e) for e in errors) if isinstance(errors, list) else ())


def read_agent_output(path: Path) -> AgentOutput:
    """Read and parse the agent output file; NotFoundError / UsageError with one line when it cannot."""
    try:
        # 32 MiB at most: gh-aw's own limits keep a run's output far below this.
        data = read_regular_file(path, limit=32 * 1024 * 1024, what="the agent output")
    except FileNotFoundError:
        raise NotFoundError(f'{path}: no agent output file; in a safe-output job pass "$GH_AW_AGENT_OUTPUT" (gh-aw '
                            "sets it)") from None  # fmt: skip
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read the agent output ({exc.strerror}); check the path") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text; pass the JSON file gh-aw wrote ($GH_AW_AGENT_OUTPUT)") from None
    return parse_agent_output(text, str(path))


# What the sanitiser leaves of a URL it refused: "(host/redacted)" or "(redacted)".
_REDACTED = re.compile(r"\((?:[\w.…-]*/)?redacted\)")
_NONE_WORDS = {"", "-", "—", "none", "null", "n/a", "na"}
# ASCII digits only: int() and Decimal() also read Arabic-Indic, Devanagari … digits, which no number here is in.
_PR_URL = re.compile(r"/pull/([0-9]{1,10})(?![0-9])")
_NUMBER_REF = re.compile(r"(?:pr|pull request|issue)?\s*#?\s*([0-9]{1,10})", re.I)
# At most 40 digits each side of the point and a 4-digit exponent, so converting it is always cheap.
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][+-]?[0-9]{1,4})?")
_GROUPED = re.compile(r"[+-]?[0-9]{1,3}(?:,[0-9]{3}){1,13}(?:\.[0-9]{1,40})?")
_COUNT_TEXT = re.compile(r"[0-9]{1,9}")
_WORDLIKE = re.compile(r"[^\W_]")


class InputError(UsageError):
    """One input of an item cannot be used (the item is reported and skipped; the others still land)."""


#: The caps on every text an agent reports, (UTF-8 bytes per entry, entries): a longer text is cut, with a warning;
#: a list keeps its first entries.  A hostile agent can neither fill the file nor push the maintainers' text out of
#: the next agent's view.  Any other input (an older or misspelt name) gets the default, bounded all the same.
AGENT_TEXT_LIMITS: dict[str, tuple[int, int]] = {
    "program": (100, 1), "status": (40, 1), "metric": (100, 1), "change": (300, 1), "notes": (1000, 1),
    "commit": (64, 1), "pr": (300, 1), "issue": (300, 1), "ci_fix_attempts": (20, 1), "pause_reason": (300, 1),
    "lessons": (300, 5), "future_directions": (300, 5), "foreclosed_avenues": (300, 5),
}  # fmt: skip
DEFAULT_TEXT_LIMIT = (300, 5)
#: The most of a raw value any step looks at, so every pass over a 5 MB value is bounded.
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


def clean_text(value: str) -> str:
    """Agent text made inert: data, never structure, authority or terminal control.

    Removes terminal escapes, control and invisible bidi characters (a carriage return becomes a newline), HTML
    comments (which could carry an item marker or a pin), pin markers and the emphasis that marks a lesson
    important; lone surrogates become U+FFFD.  Linear in ``value``.  Removing one thing can join its neighbours
    into another (``<📌!--``), so the passes repeat until nothing changes, then what is left of openers is broken.
    """
    text = _SURROGATE.sub("\ufffd", value).replace("\r\n", "\n").replace("\r", "\n")
    for _ in range(4):  # each pass is linear; a handful covers every join one removal can make
        before = text
        text = _PIN_MARK.sub("", _CONTROLS.sub("", _ANSI.sub("", text)))
        text = _drop_comments(text)
        text = _IMPORTANT_EMPHASIS.sub(lambda m: m.group(1) + m.group(2).lower() + m.group(3), text)
        text = _IMPORTANT_WORD.sub(lambda m: m.group(1).lower(), text)
        if text == before:
            return text
    return _PIN_MARK.sub("", text.replace("<!", "< !"))


def _drop_comments(text: str) -> str:
    """``text`` without HTML comments in one pass (``<!--.*?-->`` is quadratic on unclosed openers)."""
    out: list[str] = []
    at = 0
    while (start := text.find("<!--", at)) >= 0:
        out.append(text[at:start])
        end = text.find("-->", start + 4)
        if end < 0:  # an unclosed opener loses only itself
            at = start + 4
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


def _shown(text: str) -> str:
    return cut_bytes(" ".join(clean_text(text[:200]).split()), 60)


def text_value(item: Mapping[str, Any], name: str, warnings: list[str] | None = None) -> str | None:
    """A one-line text input: cleaned (:func:`clean_text`), whitespace folded, cut to its cap
    (:data:`AGENT_TEXT_LIMITS`, a warning added to ``warnings``); ``None`` when absent or empty."""
    raw = item.get(name)
    if isinstance(raw, (bool, int, float)):  # numbers as their text
        raw = str(raw).lower() if isinstance(raw, bool) else str(raw)
    elif raw is not None and not isinstance(raw, str):
        raise InputError(f"{name} must be text, got {type(raw).__name__}")
    if raw is None:
        return None
    text = " ".join(clean_text(raw[:_RAW_SCAN]).split())
    limit = AGENT_TEXT_LIMITS.get(name, DEFAULT_TEXT_LIMIT)[0]
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
    limit, most = AGENT_TEXT_LIMITS.get(name, DEFAULT_TEXT_LIMIT)
    out: list[str] = []
    cut = dropped = 0
    for entry in raw:
        if not isinstance(entry, (str, int, float)) or isinstance(entry, bool):
            raise InputError(f"{name} must hold texts, got {type(entry).__name__}")
        text = " ".join(clean_text(str(entry)[:_RAW_SCAN]).split())
        text = re.sub(r"^(?:[-*+]|[0-9]{1,9}[.)])\s+", "", text).strip()
        if not text or text.lower() in _NONE_WORDS or not _WORDLIKE.search(text):
            continue  # nothing left to read (what was there was a comment, a pin, markup)
        if len(out) >= most:
            dropped += 1
            continue
        kept = cut_bytes(text, limit)
        cut += kept != text
        out.append(kept)
    if warnings is not None and (dropped or cut or (isinstance(value, str) and len(value) > _RAW_SCAN)):
        more = f" ({dropped:,} more left out)" if dropped else ""
        warnings.append(f"{name}: kept the first {most} entries of at most {limit:,} bytes each{more}")
    return out


def number_value(item: Mapping[str, Any], name: str) -> Decimal | None:
    """A number input: a JSON number, or a string holding one (``"0.93"``, ``" 1,234.5 "``, ``"`12`"``), checked
    on the text before anything converts it (ASCII digits, 40 each side of the point, a magnitude within 1e±308)."""
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number, got {str(value).lower()}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{name} must be a finite number, got {value}")
        return Decimal(repr(value))
    if not isinstance(value, (int, str)):
        raise InputError(f"{name} must be a number, got {type(value).__name__}")
    text = str(value)
    shown = _shown(text)
    text = text.strip().strip("`").strip().replace("_", "")
    if text.lower() in _NONE_WORDS:
        return None
    if len(text) <= 200 and _GROUPED.fullmatch(text):
        text = text.replace(",", "")
    if len(text) > 200 or not _NUMBER_TEXT.fullmatch(text):
        raise InputError(f"{name} {shown!r} is not a number (ASCII digits, at most 40 before and after the point, an "
                         "exponent of at most 4 digits); report the measured value, such as 0.93")  # fmt: skip
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
            raise InputError(f"{name} must be a whole number from 0 to {maximum:,}, got {_shown(value)!r}")
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
    """A pull request or issue reference (``12``, ``"#12"``, ``"PR #12"``, a ``…/pull/12`` URL): ``(number,
    warning)``; a URL the sanitiser redacted has no number, and the warning says so."""
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
    # Whitespace folded first: the pattern's optional parts would backtrack quadratically on a long run of spaces.
    text = " ".join(value[:_RAW_SCAN].split()).strip("`").strip()
    shown = _shown(text)
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
