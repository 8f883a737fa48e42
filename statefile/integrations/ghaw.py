"""The gh-aw formats statefile meets, re-stated from their observed behaviour (github/gh-aw-actions ``setup/js/``):
repo-memory's file-glob (``glob_pattern_helpers.cjs``) and push job (``push_repo_memory.cjs`` v0.65.6 lines 224-429:
files matching ``file-glob`` are copied over the branch; the push aborts when one exceeds ``max-file-size``, more than
``max-file-count`` match, or the lines added against the clone's ``HEAD`` exceed ``floor(max-patch-size × 1.2)``
bytes), the agent output file (``collect_ndjson_output.cjs``) and the inputs a custom safe-output job receives; and the
scheduler's ``autoloop.json``, whose sizes (a constant 30720 upstream) ``statefile report`` corrects."""

from __future__ import annotations

import math
import os
import re
import stat
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from decimal import Decimal
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from statefile import __version__
from statefile.defaults import AGGRESSIVE_AT, DEFAULT_MAX_BYTES, MAX_EXPONENT, MAX_GITHUB_NUMBER, SHARED_PROGRAM
from statefile.errors import GitError, NotFoundError, UsageError
from statefile.jsontext import JsonError, parse_json
from statefile.model.archive import ARCHIVE_ROOT, LAYOUT_KINDS, ROOT_ARCHIVE_PREFIX, ArchiveLayout, part_number
from statefile.model.patterns import PIN_PATTERN, plausible
from statefile.model.text import split_lines
from statefile.numbers import number_text, plural, size_text
from statefile.redaction import redact
from statefile.store.atomic import INPUT_LIMIT, os_error, read_regular_file, write_output
from statefile.store.git.runner import git_executable
from statefile.store.names import is_program_name

#: Where gh-aw clones a repo-memory: ``/tmp/gh-aw/repo-memory/{id}`` (the lock's ``MEMORY_DIR``, not the docs').
REPO_MEMORY_ROOT = "/tmp/gh-aw/repo-memory"
#: The id of a repo-memory given as one object (what Autoloop uses): always ``default``.
DEFAULT_MEMORY_ID = "default"
#: repo-memory's defaults when the frontmatter names no limit (gh-aw v0.65.6: ``push_repo_memory.cjs`` lines 42-64).
DEFAULT_MAX_PATCH_SIZE = 10240
DEFAULT_MAX_FILE_COUNT = 100
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
#: The caps on every text an agent reports (UTF-8 bytes per entry, entries), so a hostile agent can neither fill the
#: file nor push the maintainers' text out of the next agent's view; any other input name gets the default.
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
# What makes a bullet protected from pruning or shown first (policy.compaction): a pin and "important" emphasis.
_PIN_MARK = re.compile(PIN_PATTERN, re.I)
_IMPORTANT_WORD = re.compile(r"\b(IMPORTANT|CRITICAL)\b")
_IMPORTANT_EMPHASIS = re.compile(r"\*\*(\s*)(?i:(important|critical))\b(\s*:?)(?:\s*\*\*)?")
# A git that behaves like the push job's fresh runner: no user or system configuration (diff.algorithm, …).
_PRISTINE = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C", "LANGUAGE": "C"}
_GIT_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR")
# A part in the flat or the root layout: the name's next-to-last dotted segment is its number.
_FLAT_PART = re.compile(rf"(?:{re.escape(ROOT_ARCHIVE_PREFIX)}|{ARCHIVE_ROOT}/)[^/]*\.\d{{4,}}\.[^./]*")


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """gh-aw's anchored expression: ``**`` matches anything, ``*`` anything but ``/``, all else is literal."""
    parts = re.findall(r"\*\*|\*|[^*]+", pattern)
    return re.compile("^" + "".join({"**": ".*", "*": "[^/]*"}.get(p) or re.escape(p) for p in parts) + "$")


def glob_matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether repo-memory pushes ``path`` (relative, ``/``-separated) under ``patterns`` (none: no filter)."""
    return not patterns or any(glob_regex(pattern).match(path) for pattern in patterns)


def patch_added_bytes(diff: str) -> int:
    """What the push job counts for a diff: UTF-8 length + 1 of each line starting with ``+`` but not ``+++``."""
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
        return [item for item in self.items if tool_type(str(item.get("type", ""))) == tool_type(item_type)]


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
        raise NotFoundError(f'{path}: no agent output file; pass "$GH_AW_AGENT_OUTPUT" (gh-aw sets it)') from None
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read the agent output ({exc.strerror}); check the path") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text; pass the JSON file gh-aw wrote ($GH_AW_AGENT_OUTPUT)") from None
    return parse_agent_output(text, str(path))


class InputError(UsageError):
    """One input of an item cannot be used (the item is reported and skipped; the others still land)."""


def clean_text(value: str) -> str:
    """Agent text made inert in linear time: no terminal escapes, controls, bidi characters, HTML comments (a marker or
    pin could hide in one), pins or "important" emphasis; ``\r`` becomes a newline, a lone surrogate U+FFFD."""
    text = _SURROGATE.sub("\ufffd", value).replace("\r\n", "\n").replace("\r", "\n")
    # Removing one thing can join its neighbours into another (``<📌!--``): passes repeat until nothing changes (a
    # handful covers every join), then what is left of openers is broken.
    for _ in range(4):
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
        if (end := text.find("-->", start + 4)) < 0:  # an unclosed opener loses only itself
            at = start + 4
            break
        at = end + 3
    out.append(text[at:])
    return "".join(out).replace("<!--", "").replace("-->", "")


def cut_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes on a character boundary, ``…`` marking a cut."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[: max(0, limit - 3)].decode("utf-8", "ignore").rstrip() + "…"


def _one_line(raw: str) -> str:
    return " ".join(clean_text(raw[:_RAW_SCAN]).split())


def _shown(text: str) -> str:
    return cut_bytes(_one_line(text[:200]), 60)


def _bare(text: str) -> str | None:
    text = text.strip().strip("`").strip()
    return None if text.lower() in _NONE_WORDS else text


def text_value(item: Mapping[str, Any], name: str, warnings: list[str] | None = None) -> str | None:
    """A one-line text input, cleaned and cut to its cap (with a warning); ``None`` when absent or empty."""
    raw = item.get(name)
    if raw is None:
        return None
    if isinstance(raw, (bool, int, float)):  # numbers as their text, a bool as JSON's word
        raw = str(raw).lower()
    elif not isinstance(raw, str):
        raise InputError(f"{name} must be text, got {type(raw).__name__}")
    text = _one_line(raw)
    limit = AGENT_TEXT_LIMITS.get(name, DEFAULT_TEXT_LIMIT)[0]
    kept = cut_bytes(text, limit)
    if warnings is not None and (kept != text or len(raw) > _RAW_SCAN):
        warnings.append(f"{name} was cut to {limit:,} bytes (it had {len(raw.encode('utf-8', 'replace')):,})")
    return kept or None


def lines_value(item: Mapping[str, Any], name: str, warnings: list[str] | None = None) -> list[str]:
    """A list input (a JSON list, or one entry per line), each entry cleaned and cut, at most the cap's count."""
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
        text = re.sub(r"^(?:[-*+]|[0-9]{1,9}[.)])\s+", "", _one_line(str(entry))).strip()
        if not text or text.lower() in _NONE_WORDS or not _WORDLIKE.search(text):
            continue  # nothing left to read (what was there was a comment, a pin, markup)
        if len(out) >= most:
            dropped += 1
            continue
        out.append(cut_bytes(text, limit))
        cut += out[-1] != text
    if warnings is not None and (dropped or cut or (isinstance(value, str) and len(value) > _RAW_SCAN)):
        more = f" ({dropped:,} more left out)" if dropped else ""
        warnings.append(f"{name}: kept the first {most} entries of at most {limit:,} bytes each{more}")
    return out


def number_value(item: Mapping[str, Any], name: str) -> Decimal | None:
    """A number input (``0.93``, ``" 1,234.5 "``, ``"`12`"``), its text checked before anything converts it."""
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{name} must be a finite number, got {value}")
        return Decimal(repr(value))
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        got = str(value).lower() if isinstance(value, bool) else type(value).__name__  # JSON's word for a bool
        raise InputError(f"{name} must be a number, got {got}")
    shown = _shown(str(value))
    text = str(value).strip().strip("`").strip().replace("_", "")
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


def _whole(name: str, number: Decimal | int, low: int, high: int, shown: str, noun: str = "whole number") -> int:
    if number != int(number) or not low <= number <= high:
        raise InputError(f"{name} must be a {noun} from {low:,} to {high:,}, got {shown}")
    return int(number)


def count_value(item: Mapping[str, Any], name: str, *, maximum: int = 1000) -> int | None:
    """A whole-number input from 0 to ``maximum``, from a JSON number or a string of ASCII digits."""
    value = item.get(name)
    if not isinstance(value, str):
        number = number_value(item, name)
        return None if number is None else _whole(name, number, 0, maximum, repr(value))
    text = _bare(value)
    if text is not None and not _COUNT_TEXT.fullmatch(text):
        raise InputError(f"{name} must be a whole number from 0 to {maximum:,}, got {_shown(value)!r}")
    return None if text is None else _whole(name, int(text), 0, maximum, f"{int(text):,}")


def reference_value(item: Mapping[str, Any], name: str) -> tuple[int | None, str | None]:
    """A reference (``12``, ``"#12"``, ``"PR #12"``, a ``…/pull/12`` URL) as ``(number, warning)``."""
    value = item.get(name)
    if value is None or isinstance(value, bool):
        return None, None
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise InputError(f"{name} must be a number such as 12 or '#12', got {value}")
        return _whole(name, int(value), 1, MAX_GITHUB_NUMBER, number_text(int(value)), "number"), None
    if not isinstance(value, str):
        raise InputError(f"{name} must be a number such as 12 or '#12', got {type(value).__name__}")
    # Whitespace folded first: the pattern's optional parts would backtrack quadratically on a long run of spaces.
    text = _bare(" ".join(value[:_RAW_SCAN].split())) or ""
    shown = _shown(text)
    match = _NUMBER_REF.fullmatch(text) or _PR_URL.search(text)
    if not text or match:
        return (_whole(name, int(match.group(1)), 1, MAX_GITHUB_NUMBER, repr(shown), "number") if match else None), None
    if _REDACTED.search(text):
        return None, f"{name} {shown!r} was redacted by gh-aw's sanitiser (its host is not allowed); pass the number"
    raise InputError(f"{name} {shown!r} is not a number such as 12, '#12' or a pull request URL")


class Cost(NamedTuple):
    """What a push of the folder would add (bytes, by the job's formula) and how many files it would match."""

    added: int
    files: int


@dataclass
class RepoMemoryFolder:
    """One repo-memory folder with its push limits (``globs`` empty = no file-glob filter)."""

    folder: Path
    _: KW_ONLY
    globs: tuple[str, ...]
    max_file_size: int
    max_patch_size: int
    max_file_count: int
    _baselines: dict[str, str | None] = field(default_factory=dict, repr=False)
    _costs: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    @property
    def patch_limit(self) -> int:
        """The added bytes at which the push job aborts: ``floor(max-patch-size × 1.2)``, in the job's IEEE-754."""
        return math.floor(self.max_patch_size * 1.2)

    def reaches_branch(self, path: str) -> bool:
        """Whether the push job copies ``path`` (relative, ``/``-separated) to the branch."""
        # upload-artifact leaves out hidden paths (a segment starting with "."), before the glob is even applied.
        return not any(part.startswith(".") for part in path.split("/")) and glob_matches(path, self.globs)

    def layout_for(self, program: str) -> ArchiveLayout:
        """The first archive layout the glob lets through; UsageError when none does (compaction would lose text)."""
        for kind in LAYOUT_KINDS:
            layout = ArchiveLayout(kind)
            if all(self.reaches_branch(layout.part_path(program, name)) for name in ("0001.md", "0123.md")):
                return layout
        tried = ", ".join(ArchiveLayout(kind).part_path(program, "0001.md") for kind in LAYOUT_KINDS)
        raise UsageError(f"repo-memory's file-glob ({' '.join(self.globs)}) lets no archive file of '{program}' reach "
                         f"the branch (tried {tried}); nothing was written — add '*.md' to file-glob")  # fmt: skip

    def require_state_path(self, program: str) -> None:
        """UsageError when ``{program}.md`` itself would not reach the branch."""
        if not self.reaches_branch(f"{program}.md"):
            raise UsageError(f"repo-memory's file-glob ({' '.join(self.globs)}) does not let {program}.md reach the "
                             "branch; nothing was written — add '*.md' to file-glob")  # fmt: skip

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        env = {k: v for k, v in os.environ.items() if k not in _GIT_VARIABLES} | _PRISTINE
        try:
            return subprocess.run([git_executable(), *args], cwd=self.folder, env=env, capture_output=True, check=False)
        except OSError as exc:
            raise GitError(f"cannot run git in {self.folder} ({exc.strerror}); install git") from None

    @cached_property
    def has_baseline(self) -> bool:
        """Whether the folder is the top of a git clone (an unborn branch's baseline is the empty tree)."""
        top = self._git("rev-parse", "--show-toplevel") if (self.folder / ".git").exists() else None
        at_top = top is not None and Path(os.fsdecode(top.stdout.strip())).resolve() == self.folder.resolve()
        return top is not None and top.returncode == 0 and at_top

    def baseline(self, path: str) -> str | None:
        """The text of ``path`` at the clone's HEAD, ``None`` when it is not there (a new file)."""
        if path not in self._baselines:
            shown = self._git("cat-file", "blob", f"HEAD:{path}") if self.has_baseline else None
            ok = shown is not None and shown.returncode == 0
            self._baselines[path] = shown.stdout.decode("utf-8", "surrogateescape") if shown and ok else None
        return self._baselines[path]

    def _unchanged(self, path: str) -> bool:
        old = self.baseline(path)
        try:
            return old is not None and (self.folder / path).read_bytes().decode("utf-8", "surrogateescape") == old
        except OSError:
            return False

    def added_bytes(self, path: str, new: str) -> int:
        """The bytes the push job would count for ``path`` changing from its baseline to ``new``."""
        old = self.baseline(path)
        if old == new:
            return 0
        if not old or (new.startswith(old) and old.endswith("\n")):
            added = split_lines(new[len(old or "") :])
            return patch_added_bytes("\n".join("+" + line.rstrip("\r\n") for line in added))
        import tempfile  # here, not at the top: only a write that reshapes a file needs it

        with tempfile.TemporaryDirectory(prefix="statefile-patch-") as tmp:
            for name, text in (("a", old), ("b", new)):
                Path(tmp, name).write_bytes(text.encode("utf-8", "surrogateescape"))
            # --diff-algorithm=default: Myers, as the push job's `git diff --cached` on a fresh runner.
            proc = self._git("diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv",
                             "--diff-algorithm=default", "--", str(Path(tmp, "a")), str(Path(tmp, "b")))  # fmt: skip
        if proc.returncode not in (0, 1):
            raise GitError(redact(f"git diff failed in {self.folder}: {proc.stderr.decode('utf-8', 'replace')}"))
        return patch_added_bytes(proc.stdout.decode("utf-8", "surrogateescape"))

    def files(self) -> dict[str, int]:
        """Every regular file below the folder except ``.git``: relative path → size (what the job scans)."""
        found: dict[str, int] = {}
        for top, dirs, names in os.walk(self.folder):
            rel = Path(top).relative_to(self.folder)
            dirs[:] = sorted(d for d in dirs if not (rel == Path(".") and d == ".git"))
            for name in sorted(names):
                info = os.lstat(Path(top, name))
                if stat.S_ISREG(info.st_mode):
                    found[(rel / name).as_posix()] = info.st_size
        return found

    def problems(self, programs: Iterable[str]) -> dict[str, list[str]]:
        """What would make the push drop a file statefile wrote, or abort: ``error``, ``warning`` and ``info``."""
        found: dict[str, list[str]] = {"error": [], "warning": [], "info": []}
        glob_text = " ".join(self.globs) or "(none)"
        files = self.files()
        outside = sorted(p for p in files if _written_by_statefile(p) and not self.reaches_branch(p))
        # An archive part on the branch already: the push skips it and the branch keeps it; nothing of this run is
        # lost.  A state file outside the glob stays an error: no record of it could be pushed.
        kept = [path for path in outside if "/" in path and self._unchanged(path)]
        found["error"] += [f"{path} does not match repo-memory's file-glob ({glob_text}): its push skips it, so it "
                           "never reaches the branch" for path in outside if path not in kept]  # fmt: skip
        if kept:
            names = ", ".join(kept[:3]) + (f" (+{number_text(len(kept) - 3)} more)" if len(kept) > 3 else "")
            found["info"].append(f"left on the branch as it has them (outside file-glob {glob_text}, unchanged by "
                                 f"this run): {plural(len(kept), 'file')}, {names}")  # fmt: skip
        for program in programs:
            try:
                self.layout_for(program)
            except UsageError as exc:
                found["error"].append(str(exc))
        matched = {path: size for path, size in files.items() if self.reaches_branch(path)}
        found["error"] += [f"{path} is {size_text(size)}, over repo-memory's max-file-size "
                           f"({size_text(self.max_file_size)}): the whole push would be aborted"
                           for path, size in sorted(matched.items()) if size > self.max_file_size]  # fmt: skip
        if len(matched) > self.max_file_count:
            found["error"].append(f"{plural(len(matched), 'file')} match file-glob, over repo-memory's max-file-count "
                                  f"({number_text(self.max_file_count)}): the whole push would be aborted")  # fmt: skip
        added = self.write_cost({}).added
        if added > self.patch_limit:
            found["error"].append(f"this run adds {size_text(added)}, over repo-memory's patch limit "
                                  f"({size_text(self.patch_limit)} = 1.2 × max-patch-size "
                                  f"{number_text(self.max_patch_size)}): the whole push would be aborted")  # fmt: skip
        elif added > self.max_patch_size:
            found["warning"].append(f"this run adds {size_text(added)}, over max-patch-size "
                                    f"({size_text(self.max_patch_size)}) but within its limit of "
                                    f"{size_text(self.patch_limit)} (1.2 × max-patch-size)")  # fmt: skip
        return found

    def snapshot(self) -> dict[str, str]:
        """The text of every matched file now (what a push would copy)."""
        return {path: (self.folder / path).read_bytes().decode("utf-8", "surrogateescape")
                for path in self.files() if self.reaches_branch(path)}  # fmt: skip

    def write_cost(self, files: dict[str, str], snapshot: dict[str, str] | None = None) -> Cost:
        """The push's cost if ``files`` (path → text) were written over ``snapshot`` (default: the folder now)."""
        current = self.snapshot() if snapshot is None else snapshot
        merged = {**current, **{path: text for path, text in files.items() if self.reaches_branch(path)}}
        if not self.has_baseline:
            return Cost(0, len(merged))
        for key in merged.items():
            if key not in self._costs:
                self._costs[key] = self.added_bytes(*key)
        return Cost(sum(self._costs[key] for key in merged.items()), len(merged))


def _written_by_statefile(path: str) -> bool:
    """State files, ``_shared.md`` and archive parts in any layout: the files statefile itself writes."""
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == ARCHIVE_ROOT:
        return is_program_name(parts[1]) and part_number(parts[2]) is not None
    if len(parts) == 1 and path.endswith(".md") and (path == f"{SHARED_PROGRAM}.md" or is_program_name(path[:-3])):
        return True
    return _FLAT_PART.fullmatch(path) is not None


def program_report(
    name: str, size: int, max_bytes: int, state: Mapping[str, Any], *, aggressive_at: float = AGGRESSIVE_AT
) -> dict[str, Any]:
    """One program's entry: its size against the budget and the scheduler's view of its Machine State."""
    return {
        "file": f"{name}.md",
        "size": size,
        "max": max_bytes,
        "headroom": max_bytes - size,
        "over_budget": size > max_bytes,
        "needs_compaction": size > aggressive_at * max_bytes,
        "iteration_count": count if isinstance(count := state.get("iteration_count"), int) else 0,
        "last_run": state.get("last_run"),
        "paused": bool(state.get("paused", False)),
        "completed": bool(state.get("completed", False)),
    }


def merge_report(existing: dict[str, Any], programs: dict[str, dict[str, Any]], selected: str | None) -> dict[str, Any]:
    """A copy of ``existing`` (the scheduler's JSON) with the selected program's size and budget (0 and any
    program's, as upstream writes them, without one) and our own ``statefile`` key (never one of theirs) added."""
    chosen = selected if selected is not None else existing.get("selected")
    entry = programs.get(chosen) if isinstance(chosen, str) else None
    # Every program shares the configured budget; any one of them says what it is.
    budget = entry or next(iter(programs.values()), None)
    previous = existing.get("state_file_max_bytes")
    fallback = previous if isinstance(previous, int) and not isinstance(previous, bool) else DEFAULT_MAX_BYTES
    return {
        **existing,
        "state_file_size_bytes": int(entry["size"]) if entry is not None else 0,
        "state_file_max_bytes": int(budget["max"]) if budget is not None else fallback,
        "statefile": {
            "programs": {name: dict(programs[name]) for name in sorted(programs)},
            "generated_by": f"statefile {__version__}",
        },
    }


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8, atomically, creating parent folders (a device or FIFO is written into)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, f"write {path}") from None
    write_output(path, text.encode("utf-8"))


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when the file does not exist.  Anything else is a UsageError."""
    try:
        value = parse_json(read_regular_file(path, limit=INPUT_LIMIT).decode("utf-8"), nan_as_null=True)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror}); check the path") from None
    except (UnicodeDecodeError, JsonError) as exc:
        why = f"not UTF-8 at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else exc
        raise UsageError(f"{path} is not valid JSON ({why}); fix or delete it") from None
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
        raise UsageError(f"{path} holds a JSON {kind[type(value)]}, not an object; fix or delete it")
    return value
