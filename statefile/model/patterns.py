"""The words of the state-file format, in one place: entry headings, range lines, placeholders, statuses, numbers,
metric direction, section names.  Markdown structure comes from :mod:`statefile.model.blocks`."""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

from statefile.defaults import MAX_EXPONENT

_ITER = r"Iter(?:ation)?s?\.?"
# Where an iteration number ends: "Iteration 1e308" and "Iteration 1.5" are no iteration 1.
_END = r"(?!\d|[eE][-+]?\d|\.\d)"
_ARROW = r"(?:→|->|–>|=>)"
# "Iters 50–100", "Iter 84-93": a range; a spaced em dash separates fields ("Iteration 5 — 2026-01-02") instead.
RANGE_HEAD = re.compile(rf"^\s*{_ITER}\s+#?(\d+)(?:\s*(?:–|-{{1,2}}|to)\s*|—)#?(\d+){_END}(?!-)", re.I)
# "Iters 57 — …": a range line of one iteration (the plural matters: "Iter 57" is a detailed entry).
ONE_RANGE_HEAD = re.compile(rf"^\s*Iters\s+#?(\d+){_END}(?![&,/+]|[–-]\s*#?\d)(?!\s*(?:&|and\b|,|/|\+))", re.I)
# "Iteration 12 & 13", "Iterations 12, 13" — two detailed iterations written as one entry.
PAIR_HEAD = re.compile(rf"^\s*{_ITER}\s+#?(\d+)\s*(?:&|and|,|/|\+)\s*#?(\d+){_END}", re.I)
SINGLE_HEAD = re.compile(rf"^\s*Iter(?:ation)?\.?\s+#?(\d+){_END}", re.I)
# "Iteration 126 — ✅ x · Iteration 125 — ✅ y": more iterations joined by " · ", each with a dash and a glyph or date.
JOINED_HEAD = re.compile(
    rf"\s·\s+Iter(?:ation)?\.?\s+#?(\d+){_END}\s*[—–-]{{1,2}}\s*(?=[✅❌⚠⏳]|\d{{4}}-\d{{2}}-\d{{2}})", re.I
)
# "- Iter 1: ❌ CI failed", "- **Iteration 192**: …": the numbers end a label ("- Iteration 190 and 189 …" is prose).
BULLET_ENTRY = re.compile(
    rf"^[-*+][ \t]+(?:\*\*)?{_ITER}\s+#?\d+(?:\s*(?:–|-{{1,2}}|—|to|&|and|,|/|\+)\s*#?\d+)?"
    r"(?:\s*\([^()\n]{0,80}\))?(?:\*\*)?\s*(?::|—|–|-{1,2}\s|·|\||$)",
    re.I,
)
WHEN = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?Z?(?:\s*UTC)?)?")
RUN_LINK = re.compile(r"\[Run[^\]]*\]\(([^)\s]*)\)")
# "(metrics 20→55)", "551->578%", "~133→147", "112→127→130" (a chain: first and last).
METRIC_BAND = re.compile(
    rf"~?(-?\d+(?:\.\d+)?)%?(?:\s*{_ARROW}\s*~?-?\d+(?:\.\d+)?%?)*\s*{_ARROW}\s*~?(-?\d+(?:\.\d+)?)%?"
)
# An entry heading's number prefix, for taking it off: "Iteration 12", "Iterations 12 & 13", "**Iter 5** (partial)".
ENTRY_PREFIX = re.compile(
    rf"^\**{_ITER}\s+#?\d+(?:\s*(?:&|and|,|/|\+|–|-{{1,2}}|to)\s*#?\d+)?\**\s*(?:\(partial\))?", re.I
)
# An archive chunk's heading (statefile.model.archive.make_chunk): "## Archived 2026-01-02 — compaction of perf.md".
ARCHIVED_HEAD = re.compile(r"^Archived (.*?) — (.*)$")
# Where prose mentions an iteration ("fixed in iter 138", "Iterations 104-120"): the first number.
ITERATION_MENTION = re.compile(r"\biter(?:ation)?s?\.?\s*#?(\d+)", re.I)


def entry_title(line: str) -> str:
    """The text of an entry's first line without the heading marks or bullet."""
    body = line.rstrip("\r\n").strip()
    if body.startswith("#"):
        return body.lstrip("#").strip()
    return body[1:].strip() if body[:1] in "-*+" else body


def is_entry_heading(title: str) -> bool:
    """Whether a heading's text names an iteration or a range (``Iteration 5``, ``Iters 1–9``, …)."""
    title = title.replace("**", "")
    return bool(SINGLE_HEAD.match(title) or RANGE_HEAD.match(title) or ONE_RANGE_HEAD.match(title))


def is_bullet_entry(line: str) -> bool:
    """Whether a list item's first line has an entry's shape (``- Iter 1: ❌ CI failed``); where it is decides too."""
    return bool(BULLET_ENTRY.match(line.split("\n", 1)[0].rstrip("\r")))


def heading_words(heading: str) -> str:
    """What an entry heading says besides its marks, number, date and run link (``✅ metric=277 (+8)``)."""
    title = ENTRY_PREFIX.sub("", entry_title(heading))
    title = RUN_LINK.sub("", WHEN.sub("", title))
    return re.sub(r"^[\s—–|:·-]+|[\s—–|:·-]+$", "", title).strip()


# The canonical range line (statefile.policy.ranges.render_band): "### Iters 11–40 — ✅ 17 ❌ 9 (metrics 1→2): …".
RANGE_LINE = re.compile(r"^#{3}\s+Iters (\d+)(?:–(\d+))? — (.*)$")
_BUCKET = r"(?:✅|❌|⚠️|other)"
_RANGE_COUNTS = rf"{_BUCKET} \d+(?: {_BUCKET} \d+)*(?: \(\+\d+ uncounted\))?"
# Its head in the upstream shape: "✅ 17 ❌ 9 (metrics 101.2→131.5): summary", each part optional.
RANGE_LINE_HEAD = re.compile(
    rf"^(?P<counts>{_RANGE_COUNTS})?\s?(?:\(metrics (?P<from>\S+?)→(?P<to>\S+?)\))?(?:: (?P<summary>.*))?$"
)
# Its " · " fields: where the archive is (last: archive/perf/, archive/perf.*.md, _archive.perf.*.md), counts, dates.
RANGE_ARCHIVE_FIELD = re.compile(r"^(?:archive/|_archive\.)\S*$")
RANGE_COUNTS_FIELD = re.compile(rf"^{_RANGE_COUNTS}$")
RANGE_COUNT_ITEM = re.compile(r"(✅|❌|⚠️|other) (\d+)")
RANGE_DATES_FIELD = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:…(\d{4}-\d{2}-\d{2}))?$")
RANGE_METRIC_FIELD = re.compile(r"^metric (\S+?)→(\S+)$")
# What history.parse_entry would read as a metric band: a range line's summary must not offer one.
ARROW_BAND = re.compile(rf"(\d%?\s*){_ARROW}(\s*~?-?\d)")


#: The glyph written in front of each status word (the scheduler's Recent Statuses use the words).
STATUS_GLYPHS: dict[str, str] = {
    "accepted": "✅",
    "rejected": "❌",
    "error": "⚠️",
    "ci-fix-exhausted": "⚠️",
    "pending": "⏳",
    "pending-ci": "⏳",
}
_GLYPH_WORD = {"✅": "accepted", "❌": "rejected", "⚠": "error", "⏳": "pending"}
# Status words agents write, in any case, with spaces or hyphens: "CI fix exhausted", "Pending CI", "Local Only".
_STATUS_WORD = (
    r"ci[- ]fix[- ]exhausted|pending[- ]ci|local[- ]only|not[- ]pushed|accepted|rejected|error|pending|phantom"
)
# A glyph and the word after it (the word decides), or a word alone.
_STATUS_TOKEN = re.compile(rf"(✅|❌|⚠|⏳)(?:[\ufe0f\s*_]*({_STATUS_WORD})\b)?|\b({_STATUS_WORD})\b", re.I)
_LEADING_STATUS = re.compile(rf"^[\s*_>\-+|]*(?:[✅❌⚠⏳]|(?:{_STATUS_WORD})\b)", re.I)


def status_of(text: str) -> str | None:
    """The status a text states first, as a word (``⏳ Pending CI`` → ``pending-ci``, ``✅`` → ``accepted``)."""
    if (match := _STATUS_TOKEN.search(text)) is None:
        return None
    word = match.group(2) or match.group(3)
    return re.sub(r"[\s_]+", "-", word.strip().lower()) if word else _GLYPH_WORD[match.group(1)]


def leading_status(line: str) -> str | None:
    """The status of a line that *starts* with one (``✅ +1 → 530: …``, ``- ⏳ pending CI · …``), else ``None``."""
    return status_of(line) if _LEADING_STATUS.match(line) else None


def statuses_in_cell(cell: str) -> list[str]:
    """Status words of a Recent Statuses cell written as glyphs only (``✅✅❌``), oldest first; else ``[]``."""
    glyphs = re.sub(r"[\s,\ufe0f]", "", cell)
    return [_GLYPH_WORD[ch] for ch in glyphs] if glyphs and all(ch in _GLYPH_WORD for ch in glyphs) else []


# The template's "nothing here yet" lines: "- *(none yet)*", "*(No iterations yet.)*", "_(no lessons yet)_".
_PLACEHOLDER = re.compile(
    r"^(?:[-*+][ \t]+)?([*_]{0,2})\(\s*(?:none(?:\s+yet)?|no\s+[^()\n]*?\s*yet)\s*\.?\s*\)\1\s*$", re.I
)


def is_placeholder(text: str) -> bool:
    """Whether ``text`` is a template placeholder such as ``- *(none yet)*`` (never counted, shown or kept)."""
    return bool(_PLACEHOLDER.match(text.strip()))


#: What marks a lesson pinned, and what gives it an expiry date.
PIN_PATTERN = r"📌|<!--\s*pin(?:ned)?\s*-->"
EXPIRES_PATTERN = r"\(expires (\d{4})-(\d{2})-(\d{2})\)"
#: A pin mark and the spaces after it (never the line ending).
PIN_MARK = re.compile(rf"(?:{PIN_PATTERN})[ \t]*", re.I)
_EXPIRES_MARK = re.compile(rf"\s*{EXPIRES_PATTERN}", re.I)
_ORIGIN = re.compile(r"\s*\(from [^()]*\)\s*$")


def lesson_key(text: str) -> str:
    """What makes two lessons the same: their words, without bullet, pin, expiry, ``(from …)``, case or spacing."""
    body = re.sub(r"^[-*+]\s+", "", " ".join(text.split()))
    body = _ORIGIN.sub("", _EXPIRES_MARK.sub("", PIN_MARK.sub("", body)))
    return " ".join(body.casefold().split())


# A bullet an agent reported (statefile apply) says so: "*(agent, iteration 42)* text".
_AGENT_MARK = re.compile(r"\*\(agent, iteration [0-9]+\)\*")
_AGENT_BULLET = re.compile(rf"^\s*(?:[-*+]\s+)?{_AGENT_MARK.pattern}")


def agent_bullet(text: str, source: str, iteration: int) -> str:
    """``text`` as a bullet reported by ``source`` (``agent``) in ``iteration``: ``*(agent, iteration 42)* text``."""
    return f"*({source}, iteration {iteration})* {text}"


def is_agent_bullet(text: str) -> bool:
    """Whether a bullet (with or without its ``- ``) carries the agent's mark (:func:`agent_bullet`)."""
    return bool(_AGENT_BULLET.match(text))


def without_agent_mark(text: str) -> str:
    """``text`` without the agent's mark: what the bullet says, for comparing two bullets' words."""
    return _AGENT_MARK.sub(" ", text)


# A number at the start of a cell: "606", "1,234.5", "~55%", "606 (canonical)"; "— (CI failed)" is none.
_LEADING_NUMBER = re.compile(
    r"^[\s`*_~≈]*([+\-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+\-]?\d+)?|[+\-−]?\.\d+)(?![\d,])"
)
# A number anywhere: the first one in "578.77%", "N/A (was 12)", "~133".
NUMBER = re.compile(r"[-+−]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def _decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text.replace(",", "").replace("−", "-"))
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def leading_number(cell: object) -> Decimal | None:
    """The number a Machine State cell starts with, exactly: ``606 (canonical)`` → 606, ``— (CI failed)`` → None."""
    match = _LEADING_NUMBER.match(str(cell)) if cell is not None else None
    return _decimal(match.group(1)) if match else None


def plausible(value: Decimal) -> bool:
    """A finite number whose magnitude a measurement could have (0, or within 1e±308)."""
    return value.is_finite() and (value == 0 or -MAX_EXPONENT <= value.adjusted() <= MAX_EXPONENT)


# A number cell that holds no number on purpose: "none", "n/a", "— (CI failed)", "TBD" (not "lots": a typo).
_NO_NUMBER = re.compile(r"^[\s`*_]*(?:[—–-]+(?=[\s(]|$)|(?:none|null|nil|n/?a|tbd|unknown|pending)\b)", re.I)


def says_no_number(cell: object) -> bool:
    """Whether a Machine State cell says on purpose that it holds no number (``—``, ``n/a``, ``— (CI failed)``)."""
    return cell is None or not str(cell).strip() or bool(_NO_NUMBER.match(str(cell)))


def number_text(text: str | None) -> str | None:
    """The first number in ``text`` as written, without a ``+`` sign (``"+6 (was 5)"`` → ``"6"``), or ``None``."""
    match = NUMBER.search(text.replace(",", "")) if text else None
    return match.group(0).lstrip("+").replace("−", "-") if match else None


def first_number(text: str | None) -> Decimal | None:
    """The first number in ``text``, exactly (``"578.77%"`` → 578.77, ``"N/A"`` → None)."""
    found = number_text(text)
    return _decimal(found) if found is not None else None


_LOWER = (
    r"lower|less|fewer|smaller|min|minimum|minimi[sz]e[sd]?|minimi[sz]ing|decrease[sd]?|decreasing|reduce[sd]?|down"
)
_HIGHER = r"higher|more|greater|larger|bigger|max|maximum|maximi[sz]e[sd]?|maximi[sz]ing|increase[sd]?|increasing|up"
_DIRECTION = re.compile(rf"\b(?:({_LOWER})|({_HIGHER}))\b", re.I)


def state_direction(state: dict[str, object]) -> str:
    """``"lower"`` or ``"higher"``, as a Machine State's Metric Direction's first direction word says (else higher)."""
    match = _DIRECTION.search(value) if isinstance(value := state.get("metric_direction"), str) else None
    return "lower" if match is not None and match.group(1) is not None else "higher"


_BRACKETED = re.compile(r"\[[^\]]*\]|\([^)]*\)|\{[^}]*\}|<[^>]*>")
# Words in front of a section's name: roman numerals and filler.
_LEADING_WORDS = frozenset(
    {"i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii", "section", "part", "the", "our", "my"}
)


def heading_key(title: str) -> str:
    """A heading's words for identity, without emoji, symbols, punctuation, case or spacing (``"machine state"``)."""
    text = unicodedata.normalize("NFKC", title).lower()
    return " ".join("".join(ch if (ch.isalnum() and ch.isascii()) or ch.isalpha() else " " for ch in text).split())


def section_name(title: str) -> str:
    """The words that name a section: ``"[v2] 3. 📚 Lessons Learned (pruned)"`` → ``"lessons learned"``."""
    words = heading_key(_BRACKETED.sub(" ", title)).split()
    while len(words) > 1 and (words[0].isdigit() or words[0] in _LEADING_WORDS or len(words[0]) == 1):
        words.pop(0)
    return " ".join(words)
