"""The lesson lifecycle: add, find, remove to a tombstone, restore once, pin, and promote to ``_shared.md``.

A removed lesson becomes a *tombstone*, an archive chunk holding it verbatim with the reason and the date
(``<!-- statefile:tombstone id=… removed=… -->``, a ``**Reason**`` bullet, a ``markdown`` fence); a restore appends
``<!-- statefile:restored id=… -->``, which consumes the latest earlier tombstone with its id, so each is restorable
once.  Lessons are named by number or by an id that does not move (:func:`lesson_id`, a hash of the words).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from datetime import date

from statefile.errors import NotFoundError, UsageError
from statefile.model.archive import make_chunk
from statefile.model.blocks import FENCE, HTML, ITEM, outline
from statefile.model.document import Item, StateDocument, parse
from statefile.model.patterns import PIN_MARK, lesson_key
from statefile.model.text import encode, line_body, split_lines
from statefile.policy.compaction import expiry, is_pinned

SHARED_TEMPLATE = (
    "# Shared lessons\n\n🤖 *Lessons promoted from individual programs with `statefile lesson promote`. "
    "`statefile render` shows them to every program.*\n\n## 📚 Lessons Learned\n\n- *(none yet)*\n"
)
PIN = "📌"
LESSON_ID_LENGTH = 8  # hex digits: two lessons of one program practically never share an id

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BULLET = re.compile(r"^(\s*[-*+]\s+)")
_TOMBSTONE = re.compile(r"^<!-- statefile:tombstone id=([0-9a-f]{12}) removed=(\d{4}-\d{2}-\d{2}) -->$")
_RESTORED = re.compile(r"^<!-- statefile:restored id=([0-9a-f]{12}) restored=(\d{4}-\d{2}-\d{2}) -->$")
_REASON = re.compile(r"^- \*\*Reason\*\*: (.*)$")


@dataclass(frozen=True)
class Tombstone:
    """A removed lesson found in the archive: its id, verbatim text (``\\n`` endings), reason and dates."""

    id: str
    text: str
    reason: str
    removed: str
    restored: str | None = None

    @property
    def summary(self) -> str:
        """The lesson's :func:`lesson_summary`."""
        return lesson_summary(self.text)

    @property
    def lesson_id(self) -> str:
        """The removed lesson's :func:`lesson_id`: the id it had in Lessons Learned, and will have again."""
        return lesson_id(self.text)


@dataclass(frozen=True)
class NumberedLesson:
    """A lesson as ``lesson list`` shows it: its number and :func:`lesson_id` (which commands take), text, markers."""

    number: int
    id: str
    text: str
    pinned: bool
    expires: str | None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return asdict(self)


def lessons(doc: StateDocument) -> list[Item]:
    """The lessons of the (first) Lessons Learned section, placeholders left out."""
    return [item for item in doc.list_items("lessons") if not item.is_placeholder]


def numbered_lessons(doc: StateDocument) -> list[NumberedLesson]:
    """The lessons with their 1-based numbers and ids, text without the bullet, pin and expiry as written."""
    out = []
    for number, item in enumerate(lessons(doc), 1):
        body = "\n".join(line_body(line) for line in split_lines(item.text))
        text, when = _BULLET.sub("", body, count=1).strip(), day.isoformat() if (day := expiry(body)) else None
        out.append(NumberedLesson(number, lesson_id(item.text), text, is_pinned(body), when))
    return out


def lesson_id(text: str) -> str:
    """A short hash of the lesson's :func:`~statefile.model.patterns.lesson_key`: pins never change it."""
    return hashlib.sha256(encode(lesson_key(text))).hexdigest()[:LESSON_ID_LENGTH]


def lesson_summary(text: str, width: int = 80) -> str:
    """A lesson's first line without the bullet, cut to ``width`` characters: what messages show of the lesson."""
    first = " ".join(_BULLET.sub("", line_body((split_lines(text) or [""])[0])).split())
    return first if len(first) <= width else first[: width - 1] + "…"


def _listing(items: Sequence[tuple[int, str]], limit: int = 5) -> str:
    shown = "; ".join(f"{number}: {lesson_summary(text, 50)}" for number, text in items[:limit])
    return shown + (f"; … {len(items) - limit} more" if len(items) > limit else "")


def find_lesson(doc: StateDocument, selector: int | str) -> Item:
    """The lesson picked by id, 1-based number or a unique piece of its text; else NotFoundError or UsageError."""
    found = lessons(doc)
    numbered = [(index + 1, item.text) for index, item in enumerate(found)]
    wanted = str(selector).strip().lower()
    # An id before a number (an id may be all digits); bullets with the same words are the same lesson.
    if by_id := [item for item in found if lesson_id(item.text) == wanted]:
        return by_id[0]
    if isinstance(selector, int) or selector.strip().isdigit():
        number = int(selector)
        if 1 <= number <= len(found):
            return found[number - 1]
        if not found:
            raise NotFoundError(f"no lesson {number}: Lessons Learned is empty; add one with `statefile lesson add`")
        raise NotFoundError(f"no lesson {number}: there are {len(found)} (1–{len(found)}); {_listing(numbered)}")
    needle = " ".join(selector.casefold().split())
    if not needle:
        raise UsageError("empty lesson selector; give a lesson's number or a piece of its text")
    matches = [(n, item) for n, item in enumerate(found, 1) if needle in lesson_key(item.text)]
    exact = [(n, item) for n, item in matches if lesson_key(item.text) == lesson_key(selector)]
    if len(matches) == 1 or len(exact) == 1:
        return (exact or matches)[0][1]
    if not matches:
        raise NotFoundError(f"no lesson matches {selector!r}; {_listing(numbered) or 'Lessons Learned is empty'}")
    candidates = _listing([(n, item.text) for n, item in matches])
    raise UsageError(f"{selector!r} matches {len(matches)} lessons ({candidates}); give its number or more of its text")


def _as_date(today: date | str) -> str:
    text = today.isoformat() if isinstance(today, date) else str(today).strip()
    with suppress(ValueError):
        if _DATE.match(text) and date.fromisoformat(text):
            return text
    raise UsageError(f"bad date {today!r}; write a real calendar date as YYYY-MM-DD")


def _splice(doc: StateDocument, start: int, end: int, lines: list[str]) -> StateDocument:
    """``doc`` with lines ``start``–``end`` of Lessons Learned (where list items count from) replaced."""
    section = doc.section("lessons")
    assert section is not None
    return doc.with_lines(section.start + start, section.start + end, lines)


def _append(doc: StateDocument, text: str) -> StateDocument:
    """``text`` (a whole bullet, any number of lines) added verbatim after the last lesson."""
    # Without bullets the document model creates the section, with a placeholder that the text replaces.
    new = doc if doc.list_items("lessons") else doc.with_lesson("*(none yet)*")
    items = new.list_items("lessons")
    spot = next((item for item in items if item.is_placeholder), None)
    start, end = (spot.start, spot.end) if spot is not None else (items[-1].end, items[-1].end)
    return _splice(new, start, end, [line_body(line) + new.newline for line in split_lines(text)])


def add_lesson(
    doc: StateDocument, text: str, *, expires: date | str | None = None, pinned: bool = False
) -> StateDocument:
    """``doc`` with a new one-line lesson, optionally pinned and expiring (as :meth:`StateDocument.with_lesson`)."""
    words = " ".join(text.split())
    if pinned and words and not is_pinned(words):
        words = f"{PIN} {words}"
    if expires is not None:
        words += f" (expires {_as_date(expires)})"
    return doc.with_lesson(words)


def remove_lesson(
    doc: StateDocument, selector: int | str, *, reason: str, today: date | str
) -> tuple[StateDocument, str]:
    """``doc`` without the selected lesson (a last one leaves ``- *(none yet)*``), and its tombstone chunk."""
    if not (reason := " ".join(reason.split())):
        raise UsageError("a removal needs a reason; pass --reason 'why this lesson no longer holds'")
    removed = _as_date(today)
    item = find_lesson(doc, selector)
    text = "".join(line_body(line) + "\n" for line in split_lines(item.text))
    replacement = [f"- *(none yet)*{doc.newline}"] if len(lessons(doc)) == 1 else []  # the last: a placeholder
    new = _splice(doc, item.start, item.end, replacement)
    ident = hashlib.sha256(encode(f"{removed}\n{reason}\n{text}")).hexdigest()[:12]
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))  # longer than any inside
    body = (
        f"<!-- statefile:tombstone id={ident} removed={removed} -->\n- **Reason**: {reason}\n- **Removed**: {removed}\n"
        f"- **Lesson**:\n\n{fence}markdown\n{text}{fence}\n"
    )
    return new, make_chunk(body, when=removed, what=f"lesson removed ({ident})")


def tombstones(archive_texts: Sequence[str]) -> list[Tombstone]:
    """Every lesson tombstone in a program's archive parts, oldest first, with its ``restored`` date if any."""
    found: list[Tombstone] = []
    for text in archive_texts:
        for section in parse(text).sections:
            lines = [line_body(line) for line in section.lines]
            head: re.Match[str] | None = None
            reason = ""
            for block in outline(section.text):
                first = lines[block.start] if block.start < len(lines) else ""
                if block.kind == HTML and (restored := _RESTORED.match(first)):
                    ident, when = restored.groups()  # it consumes the latest open tombstone with its id
                    if open_ := [k for k, t in enumerate(found) if t.id == ident and t.restored is None]:
                        found[open_[-1]] = replace(found[open_[-1]], restored=when)
                elif block.kind == HTML and _TOMBSTONE.match(first):
                    head, reason = _TOMBSTONE.match(first), ""
                elif head is not None and block.kind == ITEM and (match := _REASON.match(first)):
                    reason = match.group(1)
                elif head is not None and block.kind == FENCE and block.text == "markdown":
                    if block.closed:  # a damaged tombstone has nothing verbatim to restore
                        body = "".join(line + "\n" for line in lines[block.start + 1 : block.end - 1])
                        found.append(Tombstone(head.group(1), body, reason, head.group(2)))
                    head = None
    return found


def restorable_lessons(archive_texts: Sequence[str]) -> list[Tombstone]:
    """Tombstones not yet restored, oldest first."""
    return [t for t in tombstones(archive_texts) if t.restored is None]


def find_tombstone(archive_texts: Sequence[str], selector: int | str) -> Tombstone:
    """The restorable tombstone picked by id, number or text; one already restored, or several, is a UsageError."""
    every = tombstones(archive_texts)
    open_ = [t for t in every if t.restored is None]
    listing = _listing([(n + 1, t.text) for n, t in enumerate(open_)]) or "none are restorable"
    wanted = str(selector).strip().lower()
    hits, shown = [t for t in every if t.lesson_id == wanted], wanted  # an id names one lesson for good
    if not hits:
        if isinstance(selector, int) or selector.strip().isdigit():
            if 1 <= int(selector) <= len(open_):
                return open_[int(selector) - 1]
            raise NotFoundError(f"no removed lesson {int(selector)} to restore; {listing}")
        needle = " ".join(selector.casefold().split())
        if not needle:
            raise UsageError("empty selector; give a removed lesson's number, id or a piece of its text")
        hits, shown = [t for t in every if t.id.startswith(needle) or needle in lesson_key(t.text)], selector
        if not hits:
            raise NotFoundError(f"no removed lesson matches {selector!r}; {listing}")
    open_hits = list({t.id + t.removed: t for t in hits if t.restored is None}.values())
    if len(open_hits) == 1:
        return open_hits[0]
    if not open_hits:
        done = hits[-1]
        raise UsageError(
            f"lesson {done.lesson_id} ({done.summary}) was already restored on {done.restored}; it is in Lessons "
            "Learned, nothing to do"
        )
    named = "; ".join(f"{t.id}: {lesson_summary(t.text, 40)}" for t in open_hits[:5])
    raise UsageError(f"{shown!r} matches {len(open_hits)} removed lessons ({named}); give the id")


def restore_lesson(doc: StateDocument, tombstone: Tombstone, *, today: date | str) -> tuple[StateDocument, str]:
    """``doc`` with the tombstone's lesson back after the last one, and the archive chunk recording the restore."""
    named = f"lesson {tombstone.lesson_id} ({tombstone.summary})"
    if tombstone.restored is not None:
        raise UsageError(f"{named} was already restored on {tombstone.restored}")
    for number, item in enumerate(lessons(doc), start=1):
        if lesson_key(item.text) == lesson_key(tombstone.text):
            raise UsageError(f"{named} is already in Lessons Learned (lesson {number}); nothing to do")
    if not tombstone.text.strip():
        raise UsageError(f"tombstone {tombstone.id} holds no lesson text; restore it by hand from the archive")
    when = _as_date(today)
    body = (
        f"<!-- statefile:restored id={tombstone.id} restored={when} -->\n"
        f"- Restored to Lessons Learned: {tombstone.summary}\n"
    )
    return _append(doc, tombstone.text), make_chunk(body, when=when, what=f"lesson restored ({tombstone.id})")


def pin_lesson(doc: StateDocument, selector: int | str, *, pinned: bool = True) -> StateDocument:
    """``doc`` with ``📌`` on the selected lesson, or with ``pinned=False`` its pin marks taken off."""
    item = find_lesson(doc, selector)
    if is_pinned(item.text) == pinned:
        return doc
    lines = split_lines(item.text)
    if pinned:
        lines[0] = _BULLET.sub(rf"\g<1>{PIN} ", lines[0], count=1)
    else:
        lines = [PIN_MARK.sub("", line) for line in lines]
    return _splice(doc, item.start, item.end, lines)


def promote_lesson(
    doc: StateDocument, selector: int | str, shared: StateDocument | None, *, program: str
) -> StateDocument:
    """The new ``_shared.md`` with the selected lesson copied in, noting ``(from {program})``, unless there already."""
    item = find_lesson(doc, selector)
    base = shared if shared is not None else parse(SHARED_TEMPLATE)
    if any(lesson_key(existing.text) == lesson_key(item.text) for existing in lessons(base)):
        return base
    return _append(base, f"{item.text.rstrip()} (from {program})")
