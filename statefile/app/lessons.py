"""The lesson use cases (list, add, remove, restore, pin, unpin, promote); each change is one commit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from functools import partial

from statefile.app.context import AppContext
from statefile.app.reading import archive_texts, read_program
from statefile.app.writing import on_existing
from statefile.defaults import SHARED_PROGRAM
from statefile.model.archive import unwrap_chunk
from statefile.model.document import StateDocument
from statefile.policy import lessons as rules
from statefile.policy.lessons import NumberedLesson, Tombstone
from statefile.store import Change, Store


@dataclass(frozen=True)
class LessonList:
    """A program's lessons, numbered as the other lesson commands take them, and how many shared lessons there are."""

    rows: tuple[NumberedLesson, ...]
    shared: int = 0


@dataclass(frozen=True)
class LessonChange:
    """What a lesson command did: ``changed`` the lessons, ``landed`` a commit, the lesson it names, the archive."""

    changed: bool
    landed: bool
    commit: str = ""
    lesson_id: str = ""
    summary: str = ""
    archive: str = ""


def _selector(selector: str) -> int | str:
    return int(selector) if selector.isdigit() else selector


def list_lessons(app: AppContext, program: str) -> LessonList:
    """``lesson list``: PROGRAM's lessons with their numbers and ids."""
    doc = read_program(app.reader(), program)
    shared = app.store().read(SHARED_PROGRAM) if program != SHARED_PROGRAM else None
    return LessonList(tuple(rules.numbered_lessons(doc)), len(rules.numbered_lessons(shared)) if shared else 0)


def _update(app: AppContext, program: str, message: str,
            change: Callable[[Store, StateDocument], Change[LessonChange]]) -> LessonChange:  # fmt: skip
    """``change`` of an existing program's document in one commit (``message``): its detail, with the commit."""
    store = app.writer()
    result = store.update(program, on_existing(store, program, partial(change, store)), message)
    assert result.detail is not None
    return replace(result.detail, landed=result.landed, commit=result.commit or "" if result.landed else "")


def _edit(app: AppContext, program: str, verb: str, edit: Callable[[StateDocument], StateDocument]) -> LessonChange:
    def change(_: Store, doc: StateDocument) -> Change[LessonChange]:
        new = edit(doc)
        return Change(new, detail=LessonChange(new.render() != doc.render(), False))

    return _update(app, program, f"statefile: {verb} a lesson of {program}", change)


def add(app: AppContext, program: str, text: str, *, expires: date | None = None, pin: bool = False) -> LessonChange:
    """``lesson add``: one that is already there changes nothing."""
    return _edit(app, program, "add", lambda doc: rules.add_lesson(doc, text, expires=expires, pinned=pin))


def pin(app: AppContext, program: str, selector: str, *, pinned: bool = True) -> LessonChange:
    """``lesson pin`` (compaction never prunes a pinned lesson), or with ``pinned=False`` ``lesson unpin``."""
    verb = "pin" if pinned else "unpin"
    return _edit(app, program, verb, lambda doc: rules.pin_lesson(doc, _selector(selector), pinned=pinned))


def remove(app: AppContext, program: str, selector: str, *, reason: str) -> LessonChange:
    """``lesson remove``: the lesson goes to the archive with ``reason``, restorable."""
    today = datetime.now(timezone.utc).date()

    def change(store: Store, doc: StateDocument) -> Change[LessonChange]:
        text = rules.find_lesson(doc, _selector(selector)).text
        new, chunk = rules.remove_lesson(doc, _selector(selector), reason=reason, today=today)
        what, body = unwrap_chunk(chunk)
        done = LessonChange(
            True, True, "", rules.lesson_id(text), rules.lesson_summary(text), store.archive_hint(program)
        )
        return Change(new, archive=body, archive_label=what or f"lesson removed from {program}.md", detail=done)

    return _update(app, program, f"statefile: remove a lesson from {program}", change)


def restorable(app: AppContext, program: str) -> list[Tombstone]:
    """``lesson restore`` without a selector: the removed lessons that can be restored, numbered from 1."""
    store = app.reader()
    read_program(store, program)
    return rules.restorable_lessons([text for _, text in archive_texts(store, program)])


def restore(app: AppContext, program: str, selector: str) -> LessonChange:
    """``lesson restore``: a removed lesson back from the archive (an id already restored is refused)."""
    today = datetime.now(timezone.utc).date()

    def change(store: Store, doc: StateDocument) -> Change[LessonChange]:
        # The archive as of this attempt: a concurrent restore of the same lesson must be refused.
        tombstone = rules.find_tombstone([text for _, text in archive_texts(store, program)], _selector(selector))
        new, chunk = rules.restore_lesson(doc, tombstone, today=today)
        what, body = unwrap_chunk(chunk)
        done = LessonChange(True, True, "", tombstone.lesson_id, tombstone.summary)
        return Change(new, archive=body, archive_label=what, detail=done)

    return _update(app, program, f"statefile: restore a lesson of {program}", change)


def promote(app: AppContext, program: str, selector: str) -> LessonChange:
    """``lesson promote``: a copy of the lesson in _shared.md, which ``render`` shows to every program."""
    store = app.writer()
    doc = read_program(store, program)
    lesson = rules.find_lesson(doc, _selector(selector)).text
    promote = partial(rules.promote_lesson, doc, _selector(selector), program=program)
    result = store.update(SHARED_PROGRAM, promote, f"statefile: promote a lesson of {program} to _shared.md")
    return LessonChange(result.landed, result.landed, result.commit or "", rules.lesson_id(lesson),
                        rules.lesson_summary(lesson))  # fmt: skip
