"""The lesson use cases: list, add, remove (to the archive), restore, pin, unpin, promote to _shared.md; each
change is one commit, with a drifted Machine State heading restored on the way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timezone

from statefile.app.context import AppContext
from statefile.app.reading import missing_program
from statefile.app.writing import restoring_heading
from statefile.defaults import SHARED_PROGRAM
from statefile.model.archive import unwrap_chunk
from statefile.model.document import StateDocument
from statefile.policy import lessons as rules
from statefile.policy.lessons import NumberedLesson, Tombstone
from statefile.store import Change, Store, UpdateResult
from statefile.store.base import T


@dataclass(frozen=True)
class LessonList:
    """A program's lessons, numbered as the other lesson commands take them, and how many shared lessons there are."""

    rows: tuple[NumberedLesson, ...]
    shared: int = 0


@dataclass(frozen=True)
class LessonChange:
    """What a lesson command did: ``changed`` the lessons (else only a heading may have been restored), ``landed`` a
    commit, and the lesson it names (``lesson_id``, a one-line ``summary``); ``archive`` is where removals go."""

    changed: bool
    landed: bool
    commit: str = ""
    lesson_id: str = ""
    summary: str = ""
    archive: str = ""


def _selector(selector: str) -> int | str:
    return int(selector) if selector.isdigit() else selector


def _existing(store: Store, program: str, doc: StateDocument | None) -> StateDocument:
    if doc is None:
        raise missing_program(store, program)
    return doc


def list_lessons(app: AppContext, program: str) -> LessonList:
    """``lesson list``: PROGRAM's lessons with their numbers and ids."""
    store = app.reader()
    doc = _existing(store, program, store.read(program))
    shared = app.store().read(SHARED_PROGRAM) if program != SHARED_PROGRAM else None
    count = len(rules.numbered_lessons(shared)) if shared is not None else 0
    return LessonList(tuple(rules.numbered_lessons(doc)), count)


def _update(app: AppContext, program: str, message: str,
            change: Callable[[Store, StateDocument], Change[T]]) -> tuple[Store, UpdateResult[T]]:  # fmt: skip
    """``change`` of an existing program's document in one commit (``message``), the heading restored."""
    store = app.writer()
    return store, store.update(
        program, restoring_heading(lambda doc: change(store, _existing(store, program, doc))), message
    )


def _edit(app: AppContext, program: str, verb: str, edit: Callable[[StateDocument], StateDocument]) -> LessonChange:
    def change(_: Store, doc: StateDocument) -> Change[bool]:
        new = edit(doc)
        return Change(new, detail=new.render() != doc.render())

    _, result = _update(app, program, f"statefile: {verb} a lesson of {program}", change)
    return LessonChange(bool(result.detail), result.landed, result.commit or "" if result.landed else "")


def add(app: AppContext, program: str, text: str, *, expires: date | None = None, pin: bool = False) -> LessonChange:
    """``lesson add``: one that is already there changes nothing."""
    return _edit(app, program, "add", lambda doc: rules.add_lesson(doc, text, expires=expires, pinned=pin))


def pin(app: AppContext, program: str, selector: str, *, pinned: bool = True) -> LessonChange:
    """``lesson pin`` (compaction never prunes a pinned lesson), or with ``pinned=False`` ``lesson unpin``."""
    edit = rules.pin_lesson if pinned else rules.unpin_lesson
    return _edit(app, program, "pin" if pinned else "unpin", lambda doc: edit(doc, _selector(selector)))


def remove(app: AppContext, program: str, selector: str, *, reason: str) -> LessonChange:
    """``lesson remove``: the lesson goes to the archive with ``reason``, restorable."""
    today = datetime.now(timezone.utc).date()

    def change(_: Store, doc: StateDocument) -> Change[str]:
        removed = rules.find_lesson(doc, _selector(selector)).text
        new, chunk = rules.remove_lesson(doc, _selector(selector), reason=reason, today=today)
        what, body = unwrap_chunk(chunk)
        return Change(new, archive=body, archive_label=what or f"lesson removed from {program}.md", detail=removed)

    store, result = _update(app, program, f"statefile: remove a lesson from {program}", change)
    text = result.detail or ""
    return LessonChange(True, result.landed, result.commit or "", rules.lesson_id(text), rules.lesson_summary(text),
                        store.archive_hint(program))  # fmt: skip


def _archive_texts(store: Store, program: str) -> list[str]:
    return [store.read_path(path) for path in store.archive_part_paths(program)]


def restorable(app: AppContext, program: str) -> list[Tombstone]:
    """``lesson restore`` without a selector: the removed lessons that can be restored, numbered from 1."""
    store = app.reader()
    _existing(store, program, store.read(program))
    return rules.restorable_lessons(_archive_texts(store, program))


def restore(app: AppContext, program: str, selector: str) -> LessonChange:
    """``lesson restore``: a removed lesson back from the archive (an id already restored is refused)."""
    today = datetime.now(timezone.utc).date()

    def change(store: Store, doc: StateDocument) -> Change[Tombstone]:
        # The archive as of this attempt: a concurrent restore of the same lesson must be refused.
        tombstone = rules.find_tombstone(_archive_texts(store, program), _selector(selector))
        what, body = unwrap_chunk(rules.restored_chunk(tombstone, today=today))
        return Change(rules.restore_lesson(doc, tombstone), archive=body, archive_label=what, detail=tombstone)

    _, result = _update(app, program, f"statefile: restore a lesson of {program}", change)
    done = result.detail
    return LessonChange(True, result.landed, result.commit or "", done.lesson_id if done else "",
                        done.summary if done else "")  # fmt: skip


def promote(app: AppContext, program: str, selector: str) -> LessonChange:
    """``lesson promote``: a copy of the lesson in _shared.md, which ``render`` shows to every program."""
    store = app.writer()
    doc = _existing(store, program, store.read(program))
    lesson = rules.find_lesson(doc, _selector(selector)).text
    message = f"statefile: promote a lesson of {program} to _shared.md"
    result = store.update(
        SHARED_PROGRAM, lambda shared: rules.promote_lesson(doc, _selector(selector), shared, program=program), message
    )
    return LessonChange(result.landed, result.landed, result.commit or "", rules.lesson_id(lesson),
                        rules.lesson_summary(lesson))  # fmt: skip
