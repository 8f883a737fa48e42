"""The lesson lifecycle: add, find, remove to a tombstone, restore once, pin, and promote to ``_shared.md``.

Pure functions returning a new :class:`StateDocument` (a removal also the archive chunk to append); edits splice
only the lesson's lines.  A removed lesson becomes a *tombstone*, an archive chunk holding it verbatim with the
reason and the date (``<!-- statefile:tombstone id=… removed=… -->``, a ``**Reason**`` bullet, a ``markdown``
fence); a restore appends ``<!-- statefile:restored id=… -->``, which consumes the latest earlier tombstone with
its id, so each is restorable once.  Lessons are named by number or by an id that does not move
(:func:`lesson_id`, a hash of the words, kept by the tombstone).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import date

from statefile.errors import NotFoundError, UsageError
from statefile.model.archive import make_chunk
from statefile.model.blocks import FENCE, HTML, ITEM, outline
from statefile.model.document import StateDocument, parse
from statefile.model.lists import Item
from statefile.model.patterns import PIN_MARK, lesson_key
from statefile.model.text import encode, line_body, split_lines
from statefile.policy.pruning import expiry, is_pinned

SHARED_TEMPLATE = (
    "# Shared lessons\n"
    "\n"
    "🤖 *Lessons promoted from individual programs with `statefile lesson promote`. "
    "`statefile render` shows them to every program.*\n"
    "\n"
    "## 📚 Lessons Learned\n"
    "\n"
    "- *(none yet)*\n"
)
PIN = "📌"

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
        """The lesson's first line without the bullet, cut to 80 characters (for listings and messages)."""
        return lesson_summary(self.text)

    @property
    def lesson_id(self) -> str:
        """The removed lesson's :func:`lesson_id`: the id it had in Lessons Learned, and will have again."""
        return lesson_id(self.text)


def lessons(doc: StateDocument) -> list[Item]:
    """The lessons of the (first) Lessons Learned section, placeholders left out; numbers are 1-based in messages."""
    return [item for item in doc.list_items("lessons") if not item.is_placeholder]


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


def numbered_lessons(doc: StateDocument) -> list[NumberedLesson]:
    """The lessons with the 1-based numbers :func:`find_lesson` takes, their text without the bullet, pin and
    expiry (the ``(expires …)`` date as written)."""
    out = []
    for number, item in enumerate(lessons(doc), 1):
        body = "\n".join(line_body(line) for line in split_lines(item.text))
        day = expiry(body)
        out.append(NumberedLesson(number, lesson_id(item.text), _BULLET.sub("", body, count=1).strip(),
                                  is_pinned(body), day.isoformat() if day else None))  # fmt: skip
    return out


LESSON_ID_LENGTH = 8  # hex digits: two lessons of one program practically never share an id


def lesson_id(text: str) -> str:
    """A lesson's id: a short hash of its :func:`~statefile.model.patterns.lesson_key`, so pinning it or adding and
    removing other lessons never changes it."""
    return hashlib.sha256(encode(lesson_key(text))).hexdigest()[:LESSON_ID_LENGTH]


def lesson_summary(text: str, width: int = 80) -> str:
    """A lesson's first line without the bullet, cut to ``width`` characters: what messages show of the lesson."""
    first = line_body(split_lines(text)[0]) if text else ""
    first = " ".join(_BULLET.sub("", first).split())
    return first if len(first) <= width else first[: width - 1] + "…"


def _is_id(selector: str) -> bool:
    return len(selector) == LESSON_ID_LENGTH and all(c in "0123456789abcdef" for c in selector)


def _listing(items: Sequence[tuple[int, str]], limit: int = 5) -> str:
    shown = "; ".join(f"{number}: {lesson_summary(text, 50)}" for number, text in items[:limit])
    more = f"; … {len(items) - limit} more" if len(items) > limit else ""
    return shown + more


def find_lesson(doc: StateDocument, selector: int | str) -> Item:
    """The lesson picked by its id, 1-based number or a unique, case-insensitive piece of its text; else
    :class:`NotFoundError` (nothing matches) or :class:`UsageError` (several do), listing the candidates."""
    found = lessons(doc)
    numbered = [(index + 1, item.text) for index, item in enumerate(found)]
    wanted = str(selector).strip().lower()
    by_id = [item for item in found if lesson_id(item.text) == wanted] if _is_id(wanted) else []
    if by_id:  # before numbers (an id may be all digits); bullets with the same words are the same lesson
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
    matches = [(n, item) for (n, _), item in zip(numbered, found, strict=True) if needle in lesson_key(item.text)]
    exact = [(n, item) for n, item in matches if lesson_key(item.text) == lesson_key(selector)]
    if len(matches) == 1 or len(exact) == 1:
        return (exact or matches)[0][1]
    if not matches:
        listing = _listing(numbered) if numbered else "Lessons Learned is empty"
        raise NotFoundError(f"no lesson matches {selector!r}; {listing}")
    candidates = _listing([(n, item.text) for n, item in matches])
    raise UsageError(f"{selector!r} matches {len(matches)} lessons ({candidates}); give its number or more of its text")


def _as_date(today: date | str) -> str:
    text = today.isoformat() if isinstance(today, date) else str(today).strip()
    if not _DATE.match(text):
        raise UsageError(f"bad date {today!r}; write it as YYYY-MM-DD")
    try:
        date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"bad date {today!r}; write a real calendar date as YYYY-MM-DD") from None
    return text


def _lesson_lines(text: str, newline: str) -> list[str]:
    return [line_body(line) + newline for line in split_lines(text)]


def _append(doc: StateDocument, text: str) -> StateDocument:
    """``text`` (a whole bullet, any number of lines) added verbatim after the last lesson."""
    # Without bullets the document model creates the section, with a placeholder that the text replaces.
    new = doc if doc.list_items("lessons") else doc.with_lesson("*(none yet)*")
    section = new.section("lessons")
    assert section is not None
    items = new.list_items("lessons")
    spot = next((item for item in items if item.is_placeholder), None)
    start, end = (spot.start, spot.end) if spot is not None else (items[-1].end, items[-1].end)
    return new.with_lines(section.start + start, section.start + end, _lesson_lines(text, new.newline))


def add_lesson(
    doc: StateDocument, text: str, *, expires: date | str | None = None, pinned: bool = False
) -> StateDocument:
    """``doc`` with a new lesson bullet (one line), optionally pinned and with ``(expires YYYY-MM-DD)``.

    The rule of :meth:`StateDocument.with_lesson`: an empty lesson is refused, and one that is already there (same
    words, ignoring case, pins and expiry) changes nothing, so an agent may safely retry.
    """
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
    reason = " ".join(reason.split())
    if not reason:
        raise UsageError("a removal needs a reason; pass --reason 'why this lesson no longer holds'")
    removed = _as_date(today)
    item = find_lesson(doc, selector)
    section = doc.section("lessons")
    assert section is not None
    text = "".join(_lesson_lines(item.text, "\n"))
    replacement = [f"- *(none yet)*{doc.newline}"] if len(lessons(doc)) == 1 else []  # the last: a placeholder
    new = doc.with_lines(section.start + item.start, section.start + item.end, replacement)
    ident = hashlib.sha256(encode(f"{removed}\n{reason}\n{text}")).hexdigest()[:12]
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = (
        f"<!-- statefile:tombstone id={ident} removed={removed} -->\n"
        f"- **Reason**: {reason}\n"
        f"- **Removed**: {removed}\n"
        f"- **Lesson**:\n\n"
        f"{fence}markdown\n{text}{fence}\n"
    )
    return new, make_chunk(body, when=removed, what=f"lesson removed ({ident})")


def tombstones(archive_texts: Sequence[str]) -> list[Tombstone]:
    """Every lesson tombstone in a program's archive parts (oldest first), ``restored`` dates filled in: a marker
    comment, the ``**Reason**`` bullet and the next ``markdown`` fence of the same chunk (the lesson verbatim)."""
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
                    open_ = [k for k, t in enumerate(found) if t.id == ident and t.restored is None]
                    if open_:
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
    """The restorable tombstone picked by 1-based number (in :func:`restorable_lessons`), id or text; one already
    restored is a :class:`UsageError` saying when."""
    every = tombstones(archive_texts)
    open_ = [t for t in every if t.restored is None]
    numbered = [(n + 1, t.text) for n, t in enumerate(open_)]
    wanted = str(selector).strip().lower()
    if _is_id(wanted) and any(t.lesson_id == wanted for t in every):  # an id names one lesson for good
        return _only_open([t for t in every if t.lesson_id == wanted], wanted)
    if isinstance(selector, int) or selector.strip().isdigit():
        number = int(selector)
        if 1 <= number <= len(open_):
            return open_[number - 1]
        raise NotFoundError(f"no removed lesson {number} to restore; {_listing(numbered) or 'none are restorable'}")
    needle = " ".join(selector.casefold().split())
    if not needle:
        raise UsageError("empty selector; give a removed lesson's number, id or a piece of its text")
    hits = [t for t in every if t.id.startswith(needle) or needle in lesson_key(t.text)]
    if not hits:
        raise NotFoundError(f"no removed lesson matches {selector!r}; {_listing(numbered) or 'none are restorable'}")
    return _only_open(hits, selector)


def _only_open(hits: list[Tombstone], selector: str) -> Tombstone:
    """The one restorable tombstone among ``hits``; already restored or several is a :class:`UsageError`."""
    open_hits = list({t.id + t.removed: t for t in hits if t.restored is None}.values())
    if len(open_hits) == 1:
        return open_hits[0]
    if not open_hits:
        done = hits[-1]
        raise UsageError(
            f"lesson {done.lesson_id} ({done.summary}) was already restored on {done.restored}; it is in Lessons "
            "Learned, nothing to do"
        )
    listing = "; ".join(f"{t.id}: {lesson_summary(t.text, 40)}" for t in open_hits[:5])
    raise UsageError(f"{selector!r} matches {len(open_hits)} removed lessons ({listing}); give the id")


def restore_lesson(doc: StateDocument, tombstone: Tombstone) -> StateDocument:
    """``doc`` with the tombstone's lesson back verbatim after the last one (the caller appends
    :func:`restored_chunk`); a :class:`UsageError` when already restored or the lesson is there again."""
    named = f"lesson {tombstone.lesson_id} ({tombstone.summary})"
    if tombstone.restored is not None:
        raise UsageError(f"{named} was already restored on {tombstone.restored}")
    for number, item in enumerate(lessons(doc), start=1):
        if lesson_key(item.text) == lesson_key(tombstone.text):
            raise UsageError(f"{named} is already in Lessons Learned (lesson {number}); nothing to do")
    if not tombstone.text.strip():
        raise UsageError(f"tombstone {tombstone.id} holds no lesson text; restore it by hand from the archive")
    return _append(doc, tombstone.text)


def restored_chunk(tombstone: Tombstone, *, today: date | str) -> str:
    """The archive chunk recording that ``tombstone`` was restored (append it with the restored document)."""
    when = _as_date(today)
    body = (
        f"<!-- statefile:restored id={tombstone.id} restored={when} -->\n"
        f"- Restored to Lessons Learned: {tombstone.summary}\n"
    )
    return make_chunk(body, when=when, what=f"lesson restored ({tombstone.id})")


def pin_lesson(doc: StateDocument, selector: int | str) -> StateDocument:
    """``doc`` with ``📌`` at the start of the selected lesson (never pruned); a pinned one is left as it is."""
    return _with_pin(doc, selector, pinned=True)


def unpin_lesson(doc: StateDocument, selector: int | str) -> StateDocument:
    """``doc`` with the pin marks (``📌``, ``<!-- pin -->``) taken off the selected lesson."""
    return _with_pin(doc, selector, pinned=False)


def _with_pin(doc: StateDocument, selector: int | str, *, pinned: bool) -> StateDocument:
    item = find_lesson(doc, selector)
    section = doc.section("lessons")
    if is_pinned(item.text) == pinned or section is None:
        return doc
    lines = split_lines(item.text)
    if pinned:
        lines[0] = _BULLET.sub(rf"\g<1>{PIN} ", lines[0], count=1)
    else:
        lines = [PIN_MARK.sub("", line) for line in lines]
    return doc.with_lines(section.start + item.start, section.start + item.end, lines)


def promote_lesson(
    doc: StateDocument, selector: int | str, shared: StateDocument | None, *, program: str
) -> StateDocument:
    """The new ``_shared.md`` (``shared`` ``None``: from :data:`SHARED_TEMPLATE`) with the selected lesson copied in,
    noting ``(from {program})``; words already shared are not added twice."""
    item = find_lesson(doc, selector)
    base = shared if shared is not None else parse(SHARED_TEMPLATE)
    if any(lesson_key(existing.text) == lesson_key(item.text) for existing in lessons(base)):
        return base
    lines = [line_body(line) for line in split_lines(item.text)]
    lines[-1] = f"{lines[-1].rstrip()} (from {program})"
    return _append(base, "".join(line + "\n" for line in lines))
