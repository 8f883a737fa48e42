"""The lesson lifecycle: add, find, remove to a tombstone, restore once, pin, and promote to ``_shared.md``.

Pure functions: each returns a new :class:`StateDocument` (and, for a removal, the archive text to append); the
store writes them.  Edits splice only the lines of the lesson concerned, so every other byte of the file stays.

A removed lesson becomes a *tombstone*, an archive chunk holding the lesson verbatim, the reason and the date::

    ## Archived 2026-05-01 — lesson removed (3f2a9c01b7de)

    <!-- statefile:tombstone id=3f2a9c01b7de removed=2026-05-01 -->
    - **Reason**: superseded by the cache rewrite
    - **Removed**: 2026-05-01
    - **Lesson**:

    ```markdown
    - Warm the cache before timing.
    ```

The archive is append-only, so a restore is recorded as a second chunk,
``<!-- statefile:restored id=3f2a9c01b7de restored=2026-05-03 -->`` (see :func:`restored_chunk`).  Reading the
archive in order, each restored record consumes the latest earlier tombstone with its id, so a tombstone is
restorable exactly once, and removing the same lesson again later makes a new, restorable tombstone.

Numbers shift as lessons come and go, so every lesson also has an *id* that does not move: a short hash of its
words (:func:`lesson_id`).  ``lesson list`` shows it, every lesson command takes it instead of a number, and a
removed lesson keeps it in the archive (it is computed from the words the tombstone holds), so restoring the
same id twice is refused instead of restoring whichever lesson has moved up to that number.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date

from statefile.errors import NotFoundError, UsageError
from statefile.model.archive import make_chunk
from statefile.model.blocks import FENCE, HTML, ITEM, outline
from statefile.model.document import StateDocument, parse
from statefile.model.lists import Item
from statefile.model.patterns import EXPIRES_PATTERN, PIN_PATTERN
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
_ORIGIN = re.compile(r"\s*\(from [^()]*\)\s*$")
_EXPIRES = re.compile(rf"\s*{EXPIRES_PATTERN}", re.I)
# Spaces after the mark go with it, never the line ending.
_PIN_MARK = re.compile(rf"(?:{PIN_PATTERN})[ \t]*", re.I)


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
        return _short(self.text)

    @property
    def lesson_id(self) -> str:
        """The removed lesson's :func:`lesson_id`: the id it had in Lessons Learned, and will have again."""
        return lesson_id(self.text)


# -- reading -------------------------------------------------------------------------------------------------------


def lessons(doc: StateDocument) -> list[Item]:
    """The lessons of the (first) Lessons Learned section, placeholders left out; numbers are 1-based in messages."""
    return [item for item in doc.list_items("lessons") if not item.is_placeholder]


@dataclass(frozen=True)
class NumberedLesson:
    """A lesson as ``lesson list`` shows it: the number other lesson commands take, its text and its markers."""

    number: int
    text: str
    pinned: bool
    expires: str | None
    #: The :func:`lesson_id`, which other lesson commands take as well as the number and which does not move.
    id: str = ""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {"number": self.number, "id": self.id, "text": self.text, "pinned": self.pinned,
                "expires": self.expires}  # fmt: skip


def numbered_lessons(doc: StateDocument) -> list[NumberedLesson]:
    """The lessons with the 1-based numbers :func:`find_lesson` takes, their text without the bullet, pin and
    expiry (the ``(expires …)`` date as written)."""
    out = []
    for number, item in enumerate(lessons(doc), 1):
        body = "\n".join(line_body(line) for line in split_lines(item.text))
        day = expiry(body)
        out.append(NumberedLesson(number, _BULLET.sub("", body, count=1).strip(), is_pinned(body),
                                  day.isoformat() if day else None, lesson_id(item.text)))  # fmt: skip
    return out


#: How many hex digits a lesson id has: enough that two lessons of one program practically never share one.
LESSON_ID_LENGTH = 8


def lesson_id(text: str) -> str:
    """A lesson's id: a short hash of its words as :func:`_key` reads them (bullet, pin, expiry, origin, case and
    spacing aside), so pinning it or adding and removing other lessons never changes it."""
    return hashlib.sha256(encode(_key(text))).hexdigest()[:LESSON_ID_LENGTH]


def lesson_summary(text: str) -> str:
    """A lesson's first line without the bullet, cut to 80 characters: what messages show of the lesson touched."""
    return _short(text)


def _is_id(selector: str) -> bool:
    return len(selector) == LESSON_ID_LENGTH and all(c in "0123456789abcdef" for c in selector)


def _short(text: str, width: int = 80) -> str:
    first = line_body(split_lines(text)[0]) if text else ""
    first = " ".join(_BULLET.sub("", first).split())
    return first if len(first) <= width else first[: width - 1] + "…"


def _key(text: str) -> str:
    """What makes two lessons the same: the words, without bullet, pin, expiry, origin, case or spacing."""
    body = " ".join(line_body(line) for line in split_lines(text))
    body = _ORIGIN.sub("", _EXPIRES.sub("", _PIN_MARK.sub("", _BULLET.sub("", body))))
    return " ".join(body.casefold().split())


def _listing(items: Sequence[tuple[int, str]], limit: int = 5) -> str:
    shown = "; ".join(f"{number}: {_short(text, 50)}" for number, text in items[:limit])
    more = f"; … {len(items) - limit} more" if len(items) > limit else ""
    return shown + more


def find_lesson(doc: StateDocument, selector: int | str) -> Item:
    """The lesson picked by a 1-based number or a unique, case-insensitive piece of its text.

    Raises :class:`NotFoundError` when nothing matches and :class:`UsageError` when the text matches several
    lessons (unless exactly one lesson is that text); both messages list the candidates.
    """
    found = lessons(doc)
    numbered = [(index + 1, item.text) for index, item in enumerate(found)]
    wanted = str(selector).strip().lower()
    if _is_id(wanted):
        # Checked before numbers: an id may be all digits, and no program has ten million lessons.
        by_id = [item for item in found if lesson_id(item.text) == wanted]
        if by_id:
            return by_id[0]  # two bullets with the same words are the same lesson (add_lesson adds it once)
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
    matches = [(n, item) for (n, _), item in zip(numbered, found, strict=True) if needle in _key(item.text)]
    exact = [(n, item) for n, item in matches if _key(item.text) == _key(selector)]
    if len(matches) == 1 or len(exact) == 1:
        return (exact or matches)[0][1]
    if not matches:
        listing = _listing(numbered) if numbered else "Lessons Learned is empty"
        raise NotFoundError(f"no lesson matches {selector!r}; {listing}")
    candidates = _listing([(n, item.text) for n, item in matches])
    raise UsageError(f"{selector!r} matches {len(matches)} lessons ({candidates}); give its number or more of its text")


# -- editing -------------------------------------------------------------------------------------------------------


def _as_date(today: date | str) -> str:
    text = today.isoformat() if isinstance(today, date) else str(today).strip()
    if not _DATE.match(text):
        raise UsageError(f"bad date {today!r}; write it as YYYY-MM-DD")
    try:
        date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"bad date {today!r}; write a real calendar date as YYYY-MM-DD") from None
    return text


def _splice(doc: StateDocument, at: int, end: int, new_lines: list[str]) -> StateDocument:
    """A new document with absolute lines ``[at, end)`` replaced by ``new_lines``."""
    lines = split_lines(doc.render())
    if new_lines and at > 0 and at == end and not lines[at - 1].endswith(("\n", "\r")):
        lines[at - 1] += doc.newline
    lines[at:end] = new_lines
    return parse("".join(lines))


def _lesson_lines(text: str, newline: str) -> list[str]:
    return [line_body(line) + newline for line in split_lines(text)]


def _append(doc: StateDocument, text: str) -> StateDocument:
    """``text`` (a whole bullet, any number of lines) added verbatim after the last lesson."""
    new = doc
    if not new.list_items("lessons"):
        # No section or no bullets yet: let the document model create them (a placeholder we then replace).
        new = new.with_lesson("*(none yet)*")
    section = new.section("lessons")
    assert section is not None
    items = new.list_items("lessons")
    lines = _lesson_lines(text, new.newline)
    placeholder = next((item for item in items if item.is_placeholder), None)
    if placeholder is not None:
        return _splice(new, section.start + placeholder.start, section.start + placeholder.end, lines)
    at = section.start + items[-1].end
    return _splice(new, at, at, lines)


def add_lesson(
    doc: StateDocument, text: str, *, expires: date | str | None = None, pinned: bool = False
) -> StateDocument:
    """``doc`` with a new lesson bullet (one line), optionally pinned and with ``(expires YYYY-MM-DD)``.

    Adding a lesson that is already there (same words, ignoring case, pins and expiry) changes nothing, so an
    agent may safely retry.
    """
    words = " ".join(text.split())
    if not words:
        raise UsageError("empty lesson; give the lesson's text")
    if any(_key(item.text) == _key(words) for item in lessons(doc)):
        return doc
    if pinned and not is_pinned(words):
        words = f"{PIN} {words}"
    if expires is not None:
        words += f" (expires {_as_date(expires)})"
    return doc.with_lesson(words)


def _tombstone_id(text: str, reason: str, removed: str) -> str:
    return hashlib.sha256(encode(f"{removed}\n{reason}\n{text}")).hexdigest()[:12]


def remove_lesson(
    doc: StateDocument, selector: int | str, *, reason: str, today: date | str
) -> tuple[StateDocument, str]:
    """``doc`` without the selected lesson, and the tombstone chunk to append to the program's archive.

    The lesson's lines are deleted exactly (a last lesson leaves the template's ``- *(none yet)*``); the tombstone
    holds them verbatim with ``reason`` and ``today`` (see the module docstring for its shape).
    """
    reason = " ".join(reason.split())
    if not reason:
        raise UsageError("a removal needs a reason; pass --reason 'why this lesson no longer holds'")
    removed = _as_date(today)
    item = find_lesson(doc, selector)
    section = doc.section("lessons")
    assert section is not None
    text = "".join(_lesson_lines(item.text, "\n"))
    only = len(lessons(doc)) == 1
    replacement = [f"- *(none yet)*{doc.newline}"] if only else []
    new = _splice(doc, section.start + item.start, section.start + item.end, replacement)
    ident = _tombstone_id(text, reason, removed)
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
    """Every lesson tombstone in a program's archive parts (oldest part first), with ``restored`` dates filled in.

    The parts are read with the one markdown scanner: a tombstone is its marker comment, the ``**Reason**`` bullet
    and the first ````` ```markdown ````` fence after it in the same chunk, whose content is the lesson verbatim.
    """
    found: list[Tombstone] = []
    for text in archive_texts:
        for section in parse(text).sections:
            lines = [line_body(line) for line in section.lines]
            head: re.Match[str] | None = None
            reason = ""
            for block in outline(section.text):
                first = lines[block.start] if block.start < len(lines) else ""
                if block.kind == HTML and (restored := _RESTORED.match(first)):
                    ident, when = restored.groups()
                    for back in range(len(found) - 1, -1, -1):
                        if found[back].id == ident and found[back].restored is None:
                            found[back] = replace(found[back], restored=when)
                            break
                elif block.kind == HTML and _TOMBSTONE.match(first):
                    head, reason = _TOMBSTONE.match(first), ""
                elif head is not None and block.kind == ITEM and (match := _REASON.match(first)):
                    reason = match.group(1)
                elif head is not None and block.kind == FENCE and block.text == "markdown":
                    if block.closed:  # a damaged tombstone (no closing fence) has nothing verbatim to restore
                        body = "".join(line + "\n" for line in lines[block.start + 1 : block.end - 1])
                        found.append(Tombstone(head.group(1), body, reason, head.group(2)))
                    head = None
    return found


def restorable_lessons(archive_texts: Sequence[str]) -> list[Tombstone]:
    """Tombstones not yet restored, oldest first."""
    return [t for t in tombstones(archive_texts) if t.restored is None]


def find_tombstone(archive_texts: Sequence[str], selector: int | str) -> Tombstone:
    """The restorable tombstone picked by 1-based number (in :func:`restorable_lessons`), id prefix or text.

    A tombstone that was already restored is refused with a :class:`UsageError` saying when.
    """
    every = tombstones(archive_texts)
    open_ = [t for t in every if t.restored is None]
    numbered = [(n + 1, t.text) for n, t in enumerate(open_)]
    wanted = str(selector).strip().lower()
    if _is_id(wanted) and any(t.lesson_id == wanted for t in every):
        # A lesson id names one lesson for good: once restored, naming it again must not restore another.
        return _only_open([t for t in every if t.lesson_id == wanted], wanted)
    if isinstance(selector, int) or selector.strip().isdigit():
        number = int(selector)
        if 1 <= number <= len(open_):
            return open_[number - 1]
        raise NotFoundError(f"no removed lesson {number} to restore; {_listing(numbered) or 'none are restorable'}")
    needle = " ".join(selector.casefold().split())
    if not needle:
        raise UsageError("empty selector; give a removed lesson's number, id or a piece of its text")
    hits = [t for t in every if t.id.startswith(needle) or needle in _key(t.text)]
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
    listing = "; ".join(f"{t.id}: {_short(t.text, 40)}" for t in open_hits[:5])
    raise UsageError(f"{selector!r} matches {len(open_hits)} removed lessons ({listing}); give the id")


def restore_lesson(doc: StateDocument, tombstone: Tombstone) -> StateDocument:
    """``doc`` with the tombstone's lesson added back verbatim after the last lesson.

    Refused (:class:`UsageError`) when the tombstone was already restored or the same lesson is in the file
    again.  The caller appends :func:`restored_chunk` to the archive so the tombstone cannot be restored twice.
    """
    named = f"lesson {tombstone.lesson_id} ({tombstone.summary})"
    if tombstone.restored is not None:
        raise UsageError(f"{named} was already restored on {tombstone.restored}")
    for number, item in enumerate(lessons(doc), start=1):
        if _key(item.text) == _key(tombstone.text):
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
    """``doc`` with ``📌`` at the start of the selected lesson's text (compaction never prunes a pinned lesson).

    A lesson that is already pinned (``📌`` or ``<!-- pin -->``) is left as it is.
    """
    item = find_lesson(doc, selector)
    if is_pinned(item.text):
        return doc
    section = doc.section("lessons")
    assert section is not None
    first = split_lines(item.text)[0]
    match = _BULLET.match(first)
    assert match is not None  # list items always start with a bullet
    at = section.start + item.start
    return _splice(doc, at, at + 1, [match.group(1) + f"{PIN} " + first[match.end() :]])


def unpin_lesson(doc: StateDocument, selector: int | str) -> StateDocument:
    """``doc`` with the pin marks (``📌``, ``<!-- pin -->``) taken off the selected lesson."""
    item = find_lesson(doc, selector)
    if not is_pinned(item.text):
        return doc
    section = doc.section("lessons")
    assert section is not None
    at = section.start + item.start
    lines = [_PIN_MARK.sub("", line) for line in split_lines(item.text)]
    return _splice(doc, at, section.start + item.end, lines)


def promote_lesson(
    doc: StateDocument, selector: int | str, shared: StateDocument | None, *, program: str
) -> StateDocument:
    """The new ``_shared.md``: the selected lesson copied into its Lessons Learned, noting ``(from {program})``.

    ``shared`` ``None`` starts the file from :data:`SHARED_TEMPLATE`.  A lesson whose words are already shared
    (whatever program it came from) is not added twice.
    """
    item = find_lesson(doc, selector)
    base = shared if shared is not None else parse(SHARED_TEMPLATE)
    if any(_key(existing.text) == _key(item.text) for existing in lessons(base)):
        return base
    lines = [line_body(line) for line in split_lines(item.text)]
    lines[-1] = f"{lines[-1].rstrip()} (from {program})"
    return _append(base, "".join(line + "\n" for line in lines))
