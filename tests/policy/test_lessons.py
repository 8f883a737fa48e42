"""The lesson lifecycle: find, add, remove to a tombstone, restore exactly once, pin, promote to _shared.md."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from conftest import corpus_params, read_raw

from statefile.errors import NotFoundError, UsageError
from statefile.model.archive import plan_append
from statefile.model.document import StateDocument, parse
from statefile.model.template import new_state_file
from statefile.policy.compaction import is_pinned
from statefile.policy.lessons import (
    SHARED_TEMPLATE,
    add_lesson,
    find_lesson,
    find_tombstone,
    lessons,
    numbered_lessons,
    pin_lesson,
    promote_lesson,
    remove_lesson,
    restorable_lessons,
    restore_lesson,
    tombstones,
)
from statefile.views.render import render_view


def doc_with(*texts: str, newline: str = "\n") -> StateDocument:
    doc = parse(new_state_file("perf").replace("\n", newline))
    for text in texts:
        doc = doc.with_lesson(text)
    return doc


def texts(doc: StateDocument) -> list[str]:
    return [item.text.rstrip("\r\n") for item in lessons(doc)]


# -- find ------------------------------------------------------------------------------------------------------


def test_find_by_number_and_substring() -> None:
    doc = doc_with("Warm the cache first", "Cache keys must include the dtype", "Bun is not installed")
    assert find_lesson(doc, 1).text == "- Warm the cache first\n"
    assert find_lesson(doc, "3").text == "- Bun is not installed\n"
    assert find_lesson(doc, "  BUN  is ").text == "- Bun is not installed\n"
    assert find_lesson(doc, "dtype").text.startswith("- Cache keys")


def test_find_errors_list_candidates() -> None:
    doc = doc_with("Warm the cache first", "Cache keys must include the dtype")
    with pytest.raises(UsageError, match=r"'cache' matches 2 lessons \(1: Warm the cache first; 2: Cache keys"):
        find_lesson(doc, "cache")
    with pytest.raises(NotFoundError, match=r"no lesson matches 'zebra'; 1: Warm the cache first"):
        find_lesson(doc, "zebra")
    with pytest.raises(NotFoundError, match=r"no lesson 3: there are 2 \(1–2\)"):
        find_lesson(doc, 3)
    with pytest.raises(NotFoundError, match="Lessons Learned is empty"):
        find_lesson(doc_with(), 1)
    with pytest.raises(UsageError, match="empty lesson selector"):
        find_lesson(doc, "  ")


def test_exact_text_wins_over_ambiguity() -> None:
    doc = doc_with("cache", "cache keys include dtype")
    assert find_lesson(doc, "Cache").text == "- cache\n"


# -- add -------------------------------------------------------------------------------------------------------


def test_add_with_expiry_pin_and_idempotence() -> None:
    doc = add_lesson(doc_with(), "  Retry   flaky CI once ", expires=date(2026, 12, 31), pinned=True)
    assert texts(doc) == ["- 📌 Retry flaky CI once (expires 2026-12-31)"]
    again = add_lesson(doc, "retry flaky ci once")
    assert again == doc
    with pytest.raises(UsageError, match="empty lesson"):
        add_lesson(doc, " ")
    with pytest.raises(UsageError, match="bad date"):
        add_lesson(doc, "x", expires="31/12/2026")
    with pytest.raises(UsageError, match="real calendar date"):
        add_lesson(doc, "x", expires="2026-02-30")


# -- remove and restore ----------------------------------------------------------------------------------------


def test_remove_archives_tombstone_with_reason_and_date() -> None:
    doc = doc_with("Warm the cache first", "Use `bun test` with ``` fences", "Third")
    before = doc.render()
    new, chunk = remove_lesson(doc, "bun test", reason="  bun   is gone ", today=date(2026, 5, 1))
    assert texts(new) == ["- Warm the cache first", "- Third"]
    # Only the lesson's line changed.
    assert before.replace("- Use `bun test` with ``` fences\n", "") == new.render()
    assert chunk.startswith("\n## Archived 2026-05-01 — lesson removed (")
    assert "- **Reason**: bun is gone\n" in chunk
    assert "- **Removed**: 2026-05-01\n" in chunk
    assert "````markdown\n- Use `bun test` with ``` fences\n````\n" in chunk
    [tomb] = tombstones([chunk])
    assert (tomb.text, tomb.reason, tomb.removed, tomb.restored) == (
        "- Use `bun test` with ``` fences\n",
        "bun is gone",
        "2026-05-01",
        None,
    )
    assert tomb.id in chunk


def test_removing_the_last_lesson_leaves_the_placeholder() -> None:
    new, _ = remove_lesson(doc_with("only one"), 1, reason="wrong", today="2026-05-01")
    assert lessons(new) == []
    assert "- *(none yet)*\n" in new.section("lessons").text  # type: ignore[union-attr]


def test_remove_needs_reason_and_valid_date() -> None:
    doc = doc_with("x")
    with pytest.raises(UsageError, match="needs a reason"):
        remove_lesson(doc, 1, reason=" ", today="2026-05-01")
    with pytest.raises(UsageError, match="bad date"):
        remove_lesson(doc, 1, reason="r", today="yesterday")


def test_restore_once_through_a_real_archive() -> None:
    doc = doc_with("Warm the cache first", "Pin the benchmark seed\n  (it varied by 3%)", "Third")
    multi = find_lesson(doc, "seed")
    assert multi.text == "- Pin the benchmark seed (it varied by 3%)\n"  # add_lesson writes one line
    # A hand-written two-line lesson, to check verbatim restoring of continuation lines.
    raw = doc.render().replace("- Third\n", "- Third\n  with a second line\n")
    doc = parse(raw)
    new, chunk = remove_lesson(doc, "Third", reason="obsolete", today="2026-05-01")
    [(_part, content)] = plan_append("perf", None, chunk, 30720)
    archive = [content]
    [tomb] = restorable_lessons(archive)
    assert tomb.text == "- Third\n  with a second line\n"
    restored, note = restore_lesson(new, find_tombstone(archive, "third"), today="2026-05-03")
    assert restored.render() == raw  # the lesson was last: restoring puts back exactly the same bytes
    # The caller records the restore; the tombstone is then no longer restorable.
    archive = [content + note]
    assert restorable_lessons(archive) == []
    [done] = tombstones(archive)
    assert done.restored == "2026-05-03"
    with pytest.raises(UsageError, match=r"already restored on 2026-05-03"):
        find_tombstone(archive, tomb.id[:6])
    with pytest.raises(UsageError, match="already restored"):
        restore_lesson(restored, done, today="2026-05-04")
    # Restoring a stale tombstone object onto a file that has the lesson again is refused too.
    with pytest.raises(UsageError, match="already in Lessons Learned"):
        restore_lesson(restored, tomb, today="2026-05-04")


def test_remove_again_after_restore_makes_a_new_restorable_tombstone() -> None:
    doc = doc_with("a lesson")
    removed, first = remove_lesson(doc, 1, reason="r", today="2026-05-01")
    archive = first
    tomb = find_tombstone([archive], 1)
    back, note = restore_lesson(removed, tomb, today="2026-05-01")
    archive += note
    again, second = remove_lesson(back, 1, reason="r", today="2026-05-01")
    archive += second
    [open_one] = restorable_lessons([archive])
    assert open_one.id == tomb.id  # same content, same day, same reason: same id, yet a new tombstone
    assert texts(restore_lesson(again, open_one, today="2026-05-01")[0]) == ["- a lesson"]


def test_find_tombstone_errors() -> None:
    doc = doc_with("cache one", "cache two")
    doc, a = remove_lesson(doc, 1, reason="r", today="2026-05-01")
    doc, b = remove_lesson(doc, 1, reason="r", today="2026-05-02")
    archive = [a + b]
    with pytest.raises(UsageError, match="matches 2 removed lessons"):
        find_tombstone(archive, "cache")
    with pytest.raises(NotFoundError, match="no removed lesson matches 'zebra'"):
        find_tombstone(archive, "zebra")
    with pytest.raises(NotFoundError, match="no removed lesson 3"):
        find_tombstone(archive, 3)
    assert find_tombstone(archive, 2).text == "- cache two\n"


def test_restore_keeps_crlf_and_works_on_a_file_without_lessons() -> None:
    doc = doc_with("one", "two", newline="\r\n")
    new, chunk = remove_lesson(doc, "one", reason="r", today="2026-05-01")
    back, _ = restore_lesson(new, tombstones([chunk])[0], today="2026-05-01")
    assert texts(back) == ["- two", "- one"]
    assert "- one\r\n" in back.render() and "\n- one\n" not in back.render()
    bare = parse("# Autoloop: x\n\n## Notes\n\ntext")
    back, _ = restore_lesson(bare, tombstones([chunk])[0], today="2026-05-01")
    assert texts(back) == ["- one"]
    assert back.render().startswith("# Autoloop: x\n\n## Notes\n\ntext\n\n## 📚 Lessons Learned\n\n- one\n")


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_remove_then_restore_every_lesson(path: Path) -> None:
    doc = parse(read_raw(path))
    count = len(lessons(doc))
    for number in range(1, count + 1):
        item = lessons(doc)[number - 1]
        new, chunk = remove_lesson(doc, number, reason="test", today="2026-05-01")
        assert len(lessons(new)) == count - 1 or (count == 1 and lessons(new) == [])
        assert new.machine_state == doc.machine_state
        [tomb] = tombstones([chunk])
        assert tomb.text == "".join(line.rstrip("\r\n") + "\n" for line in item.text.splitlines(keepends=True))
        if any(other.text == item.text for other in lessons(new)):
            # The file holds the same lesson twice: restoring the removed copy would only duplicate it.
            with pytest.raises(UsageError, match="already in Lessons Learned"):
                restore_lesson(new, tomb, today="2026-05-01")
            continue
        back, _ = restore_lesson(new, tomb, today="2026-05-01")
        assert len(lessons(back)) == count


# -- pin and promote -------------------------------------------------------------------------------------------


def test_pin_and_unpin() -> None:
    doc = doc_with("**Bold**: first", "second <!-- pin -->")
    pinned = pin_lesson(doc, 1)
    assert texts(pinned)[0] == "- 📌 **Bold**: first"
    assert is_pinned(lessons(pinned)[0].text)
    assert pin_lesson(pinned, 1) == pinned
    assert pin_lesson(doc, 2) == doc
    assert texts(pin_lesson(pinned, 1, pinned=False))[0] == "- **Bold**: first"
    assert texts(pin_lesson(doc, 2, pinned=False))[1] == "- second "


def test_promote_creates_shared_file_and_is_idempotent() -> None:
    perf = doc_with("Warm the cache first")
    shared = promote_lesson(perf, 1, None, program="perf")
    assert shared.render() == SHARED_TEMPLATE.replace("- *(none yet)*", "- Warm the cache first (from perf)")
    assert shared.render().startswith("# Shared lessons\n")
    assert shared.section("lessons") is not None
    assert promote_lesson(perf, 1, shared, program="perf") == shared
    # The same words from another program are not added twice either.
    size = doc_with("warm the cache FIRST")
    assert promote_lesson(size, 1, shared, program="size") == shared
    more = promote_lesson(doc_with("Other thing"), 1, shared, program="size")
    assert texts(more) == ["- Warm the cache first (from perf)", "- Other thing (from size)"]
    # render shows shared lessons to every program.
    view = render_view(doc_with("own lesson"), program="size", shared=more)
    assert "- Warm the cache first (from perf)" in view.text


def test_promote_keeps_pin_and_multiline_text() -> None:
    raw = doc_with("placeholder").render().replace("- placeholder\n", "- 📌 long lesson\n  continued here\n")
    shared = promote_lesson(parse(raw), 1, None, program="perf")
    assert texts(shared) == ["- 📌 long lesson\n  continued here (from perf)"]


# -- ids that do not move (issue 22, item 10) -------------------------------------------------------------------


def test_a_lesson_keeps_its_id_when_others_move_when_pinned_and_in_the_archive() -> None:
    doc = doc_with("Warm the cache first", "Cache keys must include the dtype", "Bun is not installed")
    ids = [row.id for row in numbered_lessons(doc)]
    assert len(set(ids)) == 3 and all(len(i) == 8 for i in ids)
    assert find_lesson(doc, ids[2]).text == "- Bun is not installed\n"
    removed, chunk = remove_lesson(doc, ids[0], reason="superseded", today="2026-05-01")
    assert [row.id for row in numbered_lessons(removed)] == ids[1:]  # numbers moved up, ids did not
    assert [row.id for row in numbered_lessons(pin_lesson(removed, ids[1]))] == ids[1:]
    [(_part, archive)] = plan_append("perf", None, chunk, 30720)
    assert find_tombstone([archive], ids[0]).lesson_id == ids[0]


def test_restoring_an_id_twice_says_it_is_restored_instead_of_restoring_another() -> None:
    """`restore perf 1` run twice restored two different lessons: the numbers had moved up between the calls."""
    doc = doc_with("Warm the cache first", "Cache keys must include the dtype")
    first_id = numbered_lessons(doc)[0].id
    doc, one = remove_lesson(doc, 1, reason="r", today="2026-05-01")
    doc, two = remove_lesson(doc, 1, reason="r", today="2026-05-01")
    [(_part, archive)] = plan_append("perf", None, one + two, 30720)
    tomb = find_tombstone([archive], first_id)
    assert tomb.text == "- Warm the cache first\n"
    archive += restore_lesson(doc, tomb, today="2026-05-02")[1]
    with pytest.raises(UsageError, match=rf"lesson {first_id} \(Warm the cache first\) was already restored"):
        find_tombstone([archive], first_id)
    assert find_tombstone([archive], 1).text == "- Cache keys must include the dtype\n"  # numbers still work
