"""The domain patterns of the state-file format, in one place: what counts as an entry heading, a range line, a
placeholder, a status, a number, a metric direction, a known section's name.

Markdown structure (headings, fences, list items, rules) comes from :mod:`statefile.model.blocks`; this module
only reads the *words* inside those blocks.  Every module that needs one of these readings imports it from here,
so two commands can never disagree about what a line says.  Pure functions on strings.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

# -- entry headings ----------------------------------------------------------------------------------------------

_ITER = r"Iter(?:ation)?s?\.?"
# Where an iteration number ends: not in more digits, an exponent or a decimal part ("Iteration 1e308" and
# "Iteration 1.5" are no iteration 1; read as one, the real iteration 1 was archived as its duplicate).
_END = r"(?!\d|[eE][-+]?\d|\.\d)"
_ARROW = r"(?:→|->|–>|=>)"
# "Iters 50–100", "Iterations 53–165", "Iter 84-93", "Iters 1–426:" — a range.
# An em dash with spaces is the field separator of a detailed heading ("Iteration 5 — 2026-01-02"), so it only
# counts as a range dash when tight; a second "number" that is the start of a date never makes a range.
RANGE_HEAD = re.compile(rf"^\s*{_ITER}\s+#?(\d+)(?:\s*(?:–|-{{1,2}}|to)\s*|—)#?(\d+){_END}(?!-)", re.I)
# "Iters 57 — …": a range line of one iteration (statefile writes it so, never "57–57").  The plural matters: "Iter
# 57" and "Iteration 57" are detailed entries.
ONE_RANGE_HEAD = re.compile(rf"^\s*Iters\s+#?(\d+){_END}(?![&,/+]|[–-]\s*#?\d)(?!\s*(?:&|and\b|,|/|\+))", re.I)
# "Iteration 12 & 13", "Iterations 12, 13" — two detailed iterations written as one entry.
PAIR_HEAD = re.compile(rf"^\s*{_ITER}\s+#?(\d+)\s*(?:&|and|,|/|\+)\s*#?(\d+){_END}", re.I)
SINGLE_HEAD = re.compile(rf"^\s*Iter(?:ation)?\.?\s+#?(\d+){_END}", re.I)
# "Iteration 1.5", "Iteration 1e308": a heading of an entry's shape whose number is no whole number (see _END).
FRACTIONAL_HEAD = re.compile(rf"^\s*{_ITER}\s+#?(\d+(?:\.\d+|[eE][-+]?\d+))", re.I)
# "### Iteration 126 — ✅ abs/round (81) · Iteration 125 — ✅ autocorr (80)": more iterations joined by " · ".
# A joined part has an entry's own shape — its number, a dash, then a status glyph or a date — so a summary that
# merely mentions an iteration ("✅ reverted · Iteration 7 approach restored") never claims that iteration.
JOINED_HEAD = re.compile(
    rf"\s·\s+Iter(?:ation)?\.?\s+#?(\d+){_END}\s*[—–-]{{1,2}}\s*(?=[✅❌⚠⏳]|\d{{4}}-\d{{2}}-\d{{2}})", re.I
)
# A bullet that is an entry of its own: "- Iter 1: ❌ CI failed", "- **Iteration 192**: …", "- Iters 168-170: …".
# The number(s) must be followed by a label's end (":", a dash, "·", "|", or the end of the line), so prose such as
# "- Iteration 190 and 189 both had wrong branch" is never an entry.
BULLET_ENTRY = re.compile(
    rf"^[-*+][ \t]+(?:\*\*)?{_ITER}\s+#?\d+(?:\s*(?:–|-{{1,2}}|—|to|&|and|,|/|\+)\s*#?\d+)?"
    r"(?:\s*\([^()\n]{0,80}\))?(?:\*\*)?\s*(?::|—|–|-{1,2}\s|·|\||$)",
    re.I,
)
PARTIAL = re.compile(r"\(partial\)", re.I)
WHEN = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?Z?(?:\s*UTC)?)?")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
RUN_LINK = re.compile(r"\[Run[^\]]*\]\(([^)\s]*)\)")
# "(metrics 20→55)", "551->578%", "~133→147", "112→127→130" (a chain: first and last).
METRIC_BAND = re.compile(
    rf"~?(-?\d+(?:\.\d+)?)%?(?:\s*{_ARROW}\s*~?-?\d+(?:\.\d+)?%?)*\s*{_ARROW}\s*~?(-?\d+(?:\.\d+)?)%?"
)
# An entry heading's number prefix, for taking it off: "Iteration 12", "Iterations 12 & 13", "**Iter 5** (partial)".
ENTRY_PREFIX = re.compile(
    rf"^\**{_ITER}\s+#?\d+(?:\s*(?:&|and|,|/|\+|–|-{{1,2}}|to)\s*#?\d+)?\**\s*(?:\(partial\))?", re.I
)
# A maintainer's acknowledgement of a known hole in the history, anywhere in the file (best right under the
# history heading, where compaction never folds it away): "<!-- statefile: gap 12–40 acknowledged -->", "gap 7".
GAP_ACKNOWLEDGED = re.compile(
    r"<!--\s*statefile:\s*gaps?\s+#?(\d{1,9})(?:\s*(?:–|—|-|\.\.|to)\s*#?(\d{1,9}))?\s+acknowledged\b[^>]*?-->", re.I
)
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
    """Whether a list item's first line is an entry of its own, as in ``- Iter 1: ❌ CI failed``.

    Only the *shape* of the line; whether the bullet is an entry also depends on where it is (a bullet inside
    another entry's body is that entry's text: see :meth:`statefile.model.document.StateDocument.entries_of`).
    """
    return bool(BULLET_ENTRY.match(line.split("\n", 1)[0].rstrip("\r")))


def heading_words(heading: str) -> str:
    """What an entry heading says besides its marks, number, date and run link (``✅ metric=277 (+8)``)."""
    title = ENTRY_PREFIX.sub("", entry_title(heading))
    title = RUN_LINK.sub("", WHEN.sub("", title))
    return re.sub(r"^[\s—–|:·-]+|[\s—–|:·-]+$", "", title).strip()


# -- range lines statefile writes ---------------------------------------------------------------------------------

# The canonical range line (statefile.policy.ranges.render_band): "### Iters 11–40 — ✅ 17 ❌ 9 (metrics 1→2): …".
RANGE_LINE = re.compile(r"^#{3}\s+Iters (\d+)(?:–(\d+))? — (.*)$")
_BUCKET = r"(?:✅|❌|⚠️|other)"
_RANGE_COUNTS = rf"{_BUCKET} \d+(?: {_BUCKET} \d+)*(?: \(\+\d+ uncounted\))?"
# Its head in the upstream shape: "✅ 17 ❌ 9 (metrics 101.2→131.5): summary", each part optional.
RANGE_LINE_HEAD = re.compile(
    rf"^(?P<counts>{_RANGE_COUNTS})?\s?(?:\(metrics (?P<from>\S+?)→(?P<to>\S+?)\))?(?:: (?P<summary>.*))?$"
)
# Its " · " fields: where the archive is (always last), counts, dates and metric (the earlier shape's fields).
# The archive field names the parts where the store really keeps them: ``archive/perf/`` (a branch),
# ``archive/perf.*.md`` or ``_archive.perf.*.md`` (gh-aw's repo-memory, where file-glob decides the paths).
RANGE_ARCHIVE_FIELD = re.compile(r"^(?:archive/|_archive\.)\S*$")
RANGE_COUNTS_FIELD = re.compile(rf"^{_RANGE_COUNTS}$")
RANGE_COUNT_ITEM = re.compile(r"(✅|❌|⚠️|other) (\d+)")
RANGE_DATES_FIELD = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:…(\d{4}-\d{2}-\d{2}))?$")
RANGE_METRIC_FIELD = re.compile(r"^metric (\S+?)→(\S+)$")
# What history.parse_entry would take for a metric band (the arrows of METRIC_BAND between two numbers): a range
# line's summary must not offer one when the line has none.
ARROW_BAND = re.compile(rf"(\d%?\s*){_ARROW}(\s*~?-?\d)")


# -- statuses ----------------------------------------------------------------------------------------------------

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
_STATUS_TOKEN = re.compile(rf"(✅|❌|⚠|⏳)|\b({_STATUS_WORD})\b", re.I)
_AFTER_GLYPH = re.compile(rf"[\ufe0f\s*_]*({_STATUS_WORD})\b", re.I)
_LEADING_STATUS = re.compile(rf"^[\s*_>\-+|]*(?:[✅❌⚠⏳]|(?:{_STATUS_WORD})\b)", re.I)


def _word(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().lower())


def status_of(text: str) -> str | None:
    """The status a piece of text states first, as a word (``None`` when it states none).

    A glyph followed by a status word is that word (``⏳ Pending CI`` → ``pending-ci``, ``⚠️ CI fix exhausted`` →
    ``ci-fix-exhausted``, ``⚠️ Local Only`` → ``local-only``); a glyph alone is its word (``✅`` → ``accepted``);
    what comes later does not change it (``✅ Accepted (reconciled from pending-ci)`` → ``accepted``).
    """
    match = _STATUS_TOKEN.search(text)
    if match is None:
        return None
    glyph = match.group(1)
    if glyph is None:
        return _word(match.group(2))
    after = _AFTER_GLYPH.match(text, match.end())
    return _word(after.group(1)) if after else _GLYPH_WORD[glyph]


def leading_status(line: str) -> str | None:
    """The status of a line that *starts* with one (``✅ +1 → 530: …``, ``- ⏳ pending CI · …``), else ``None``.

    For entry bodies without a ``**Status**:`` field: a status named later in a prose line is not the entry's.
    """
    return status_of(line) if _LEADING_STATUS.match(line) else None


def statuses_in_cell(cell: str) -> list[str]:
    """Status words of a Recent Statuses cell written as glyphs only (``✅✅❌``), oldest first; else ``[]``."""
    glyphs = re.sub(r"[\s,\ufe0f]", "", cell)
    if not glyphs or any(ch not in _GLYPH_WORD for ch in glyphs):
        return []
    return [_GLYPH_WORD[ch] for ch in glyphs]


# -- placeholders ------------------------------------------------------------------------------------------------

# The template's "nothing here yet" lines: "- *(none yet)*", "*(none)*", "*(No iterations yet.)*",
# "_(no lessons yet)_", with or without the bullet and the emphasis.
_PLACEHOLDER = re.compile(
    r"^(?:[-*+][ \t]+)?([*_]{0,2})\(\s*(?:none(?:\s+yet)?|no\s+[^()\n]*?\s*yet)\s*\.?\s*\)\1\s*$", re.I
)


def is_placeholder(text: str) -> bool:
    """Whether ``text`` (a bullet or a line) is a template placeholder such as ``- *(none yet)*``.

    One definition for every module: a placeholder is never a lesson, never counted, never shown, and the first
    real bullet or entry replaces it.
    """
    return bool(_PLACEHOLDER.match(text.strip()))


# -- pins and expiry -----------------------------------------------------------------------------------------------

#: What marks a lesson pinned, and what gives it an expiry date.
PIN_PATTERN = r"📌|<!--\s*pin(?:ned)?\s*-->"
EXPIRES_PATTERN = r"\(expires (\d{4})-(\d{2})-(\d{2})\)"

# -- who wrote a bullet ----------------------------------------------------------------------------------------------

# A bullet an agent reported through gh-aw's tool (statefile apply) starts with whose it is and which iteration it
# came from, so neither a maintainer nor the next agent takes it for a maintainer's word.
_AGENT_BULLET = re.compile(r"^\s*(?:[-*+]\s+)?\*\(agent, iteration ([0-9]+)\)\*")
_AGENT_MARK = re.compile(r"\*\(agent, iteration [0-9]+\)\*")


def agent_bullet(text: str, source: str, iteration: int) -> str:
    """``text`` as a bullet reported by ``source`` (``agent``) in ``iteration``: ``*(agent, iteration 42)* text``."""
    return f"*({source}, iteration {iteration})* {text}"


def is_agent_bullet(text: str) -> bool:
    """Whether a bullet (with or without its ``- ``) carries the agent's mark (:func:`agent_bullet`)."""
    return bool(_AGENT_BULLET.match(text))


def without_agent_mark(text: str) -> str:
    """``text`` without the agent's mark: what the bullet says, for comparing two bullets' words."""
    return _AGENT_MARK.sub(" ", text)


# -- numbers -----------------------------------------------------------------------------------------------------

# A number at the start of a cell: "606", "0.00000649", "1,234.5", "~55%", "606 (canonical)".  "— (CI failed)"
# starts with a dash that is not a sign, so it reads as no number.
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
    if cell is None:
        return None
    match = _LEADING_NUMBER.match(str(cell))
    return _decimal(match.group(1)) if match else None


# What a number cell says when it holds no number on purpose: "none", "n/a", "— (CI failed)", "TBD".  Any other
# text there ("lots") is a number someone mistyped, which the record rules cannot compare with.
_NO_NUMBER = re.compile(r"^[\s`*_]*(?:[—–-]+(?=[\s(]|$)|(?:none|null|nil|n/?a|tbd|unknown|pending)\b)", re.I)


def says_no_number(cell: object) -> bool:
    """Whether a Machine State cell says on purpose that it holds no number (``—``, ``n/a``, ``— (CI failed)``)."""
    return cell is None or not str(cell).strip() or bool(_NO_NUMBER.match(str(cell)))


def number_text(text: str | None) -> str | None:
    """The first number in ``text`` as written, without a ``+`` sign (``"+6 (was 5)"`` → ``"6"``), or ``None``."""
    if not text:
        return None
    match = NUMBER.search(text.replace(",", ""))
    return match.group(0).lstrip("+").replace("−", "-") if match else None


def first_number(text: str | None) -> Decimal | None:
    """The first number in ``text``, exactly (``"578.77%"`` → 578.77, ``"N/A"`` → None)."""
    found = number_text(text)
    return _decimal(found) if found is not None else None


# -- metric direction --------------------------------------------------------------------------------------------

_LOWER = (
    r"lower|less|fewer|smaller|min|minimum|minimi[sz]e[sd]?|minimi[sz]ing|decrease[sd]?|decreasing|reduce[sd]?|down"
)
_HIGHER = r"higher|more|greater|larger|bigger|max|maximum|maximi[sz]e[sd]?|maximi[sz]ing|increase[sd]?|increasing|up"
_DIRECTION = re.compile(rf"\b(?:({_LOWER})|({_HIGHER}))\b", re.I)


def metric_direction(value: object) -> str:
    """``"lower"`` or ``"higher"`` from a Metric Direction text: the first direction word it uses decides.

    ``lower``, ``minimize``, ``decrease``, ``less is better``, ``lower is better`` … read as ``"lower"``;
    ``higher``, ``maximize`` … and anything without a direction word (the upstream default) as ``"higher"``.
    The one reading for the record rules, compaction's metric bands, range lines and views.
    """
    if not isinstance(value, str):
        return "higher"
    match = _DIRECTION.search(value)
    return "lower" if match is not None and match.group(1) is not None else "higher"


def state_direction(state: dict[str, object]) -> str:
    """The metric direction of a parsed Machine State (its ``metric_direction`` row; ``"higher"`` without one)."""
    return metric_direction(state.get("metric_direction"))


# -- section names -----------------------------------------------------------------------------------------------

_BRACKETED = re.compile(r"\[[^\]]*\]|\([^)]*\)|\{[^}]*\}|<[^>]*>")
_ROMAN = frozenset({"i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii"})
_FILLER = frozenset({"section", "part", "the", "our", "my"})


def heading_key(title: str) -> str:
    """A heading's words for identity: emoji, symbols, punctuation, case and spacing do not matter.

    ``"⚙️ Machine State"``, ``"Machine State"`` and ``"\\ufffd\\ufffd Machine State"`` all give ``"machine state"``.
    """
    kept = []
    for ch in unicodedata.normalize("NFKC", title).lower():
        kept.append(ch if (ch.isalnum() and ch.isascii()) or ch.isalpha() else " ")
    return " ".join("".join(kept).split())


def section_name(title: str) -> str:
    """A section heading reduced to the words that name it, decorations removed.

    Decorations are what agents put around a known name: emoji and other symbols, markdown emphasis, bracketed or
    parenthesized tags anywhere (``[WIP]``, ``(pruned)``), and in front of the name numbers (``3.``, ``2)``,
    ``IV.``, ``#4``), single letters (``A.``) and filler words (``Section``, ``Part``, ``The``).  What remains
    starts with the name: ``"[v2] 3. 📚 Lessons Learned (pruned)"`` → ``"lessons learned"``.
    """
    words = heading_key(_BRACKETED.sub(" ", title)).split()
    while len(words) > 1 and (
        words[0].isdigit() or words[0] in _ROMAN or words[0] in _FILLER or (len(words[0]) == 1 and words[0].isalpha())
    ):
        words.pop(0)
    return " ".join(words)
