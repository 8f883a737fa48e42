"""Repair: fix what ``check`` reports that has only one right answer, archiving every byte it takes out.

``repair(doc, program=…)`` is a pure function.  In order:

1. **Heading drift**: a known section whose heading differs from the template's only in emoji, punctuation, case or
   spacing (``## Machine State``, ``## \\ufffd\\ufffd Lessons Learned``) gets the exact heading back — the
   scheduler finds the table only under ``## ⚙️ Machine State``.  A heading with other words is left alone.
2. **A missing history heading**: entries sitting under another section get ``## 📊 Iteration History`` above them.
3. **Duplicated sections**: the copy's blocks (bullets, paragraphs, history entries) that the first section lacks
   move into the first one, then the copy goes to the archive.  A second Machine State table is archived whole:
   the scheduler reads only the first (when the first has no rows, which table is right is a judgment: left).
4. **Duplicated entries**: an entry repeated byte for byte, or a ``(partial)`` entry whose iterations a complete
   entry covers, goes to the archive (the same rule compaction applies).
5. **Overlapping range lines**: each group of range lines whose iterations overlap becomes one canonical range line
   (:func:`statefile.policy.ranges.merge_bands`); the originals go to the archive.

Everything else ``check`` reports needs a person or compaction: a gap in the history, an Iteration Count that
disagrees with it, a detailed entry inside a range (compaction folds it), an unclosed code fence.  Those stay in
:attr:`RepairResult.remaining`.  A file with an unclosed code fence or HTML block is not edited at all.
Repairing a repaired document changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from statefile.defaults import RANGE_TEXT_CAP
from statefile.model import lists as bullets
from statefile.model.anomalies import REPAIRABLE, Anomaly
from statefile.model.blocks import RULE, outline
from statefile.model.document import StateDocument, parse
from statefile.model.history import Entry, Iteration, IterationRange, parse_entry
from statefile.model.patterns import heading_key, state_direction
from statefile.model.sections import SECTION_KINDS, Section
from statefile.model.spans import holds
from statefile.model.text import line_body, line_ending, split_lines
from statefile.numbers import plural
from statefile.policy.planning import join_entries, split_tail
from statefile.policy.ranges import band_from_range, merge_bands, render_band

#: The ``check`` warning codes repair answers.
FIXABLE = REPAIRABLE
_LIST_KINDS = frozenset({"lessons", "foreclosed", "future"})


@dataclass(frozen=True)
class Fix:
    """One repair: the ``check`` code it answers and what was done."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class RepairResult:
    """The repaired document, the text taken out of it (verbatim, ``""`` for none), what was fixed and what is
    left for a person."""

    document: StateDocument
    archive: str
    fixes: tuple[Fix, ...]
    remaining: tuple[Anomaly, ...]

    @property
    def changed(self) -> bool:
        """Whether anything was repaired."""
        return bool(self.fixes)


#: Why a warning ``repair`` leaves is left, by code (what to do instead).
LEFT_BECAUSE: dict[str, str] = {
    "history-gap": "no entry says what those iterations did; only a person can",
    "iteration-count-mismatch": "whether the count or the history is right is a judgment; `statefile edit` it",
    "range-overlaps-entry": "`statefile compact` folds the entry into its range (by policy)",
    "unclosed-block": "close the code fence or HTML block by hand (`statefile edit`); nothing else was changed",
    "duplicate-section": "the first Machine State table has no rows: which table is right is a judgment",
    "duplicate-iteration": "the copies differ and none is complete: `statefile compact` folds them into one range",
    "missing-machine-state": "a new table would make the scheduler start the program over; `statefile edit` it",
    "empty-machine-state": "the table's values are not known; `statefile edit` it",
}


def repair(doc: StateDocument, *, program: str | None = None, archive: str | None = None) -> RepairResult:
    """Repair ``doc`` (see the module docstring); ``program`` names the archive folder merged range lines point to,
    ``archive`` where the store really keeps the parts when that is not ``archive/{program}/`` (repo-memory)."""
    if doc.unclosed_block is not None:
        return RepairResult(doc, "", (), doc.warnings)
    fixes: list[Fix] = []
    archived: list[str] = []
    steps: list[Callable[[StateDocument], tuple[StateDocument, list[str], list[Fix]]]] = [
        _restore_headings,
        _history_heading,
        _merge_duplicate_sections,
        _drop_duplicate_entries,
        lambda d: _merge_overlapping_ranges(d, program, archive),
    ]
    for step in steps:
        new, removed, done = step(doc)
        if done and not _sound(doc, new, removed=len(doc.sections) - len(new.sections)):
            continue  # a step that would disturb anything else (an open code block, the table, coverage) is skipped
        doc = new
        archived.extend(removed)
        fixes.extend(done)
    archive = ""
    for piece in archived:
        archive += piece if piece.endswith(("\n", "\r")) else piece + "\n"
        if not archive.endswith(("\n\n", "\r\n\r\n")):
            archive += "\n"
    return RepairResult(doc, archive, tuple(fixes), doc.warnings)


# -- 1. heading drift ----------------------------------------------------------------------------------------------


def _restore_headings(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
    lines = split_lines(doc.render())
    fixes = []
    archived = []
    for section in doc.sections:
        if section.kind not in SECTION_KINDS or section.title is None or section.level != 2:
            continue
        canonical = SECTION_KINDS[section.kind][0]
        if section.title == canonical[3:]:
            continue  # the exact heading (however it is spaced or closed): nothing drifted
        if heading_key(section.title) != heading_key(canonical[3:]):
            continue  # other words ("## Lessons"): a name someone chose, not drift
        line = lines[section.start]
        bom = "\ufeff" if line.startswith("\ufeff") else ""
        lines[section.start] = bom + canonical + line_ending(line)
        code = "machine-state-heading" if section.kind == "machine_state" else "heading-drift"
        fixes.append(Fix(code, f"'## {section.title}' is '{canonical}' again"))
        # The old heading, byte for byte, as text (a "##" line in the archive would read as a chunk heading).
        archived.append(f"- heading restored to {canonical[3:]}, it was: {line_body(line).lstrip(chr(0xFEFF))}\n")
    return (parse("".join(lines)) if fixes else doc), archived, fixes


# -- 2. a missing history heading ----------------------------------------------------------------------------------


def _history_heading(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
    if not doc.history_misplaced:
        return doc, [], []
    new, _ = doc.with_history_section()
    heading = SECTION_KINDS["history"][0]
    return new, [], [Fix("missing-history-heading", f"'{heading}' added above the first iteration entry")]


# -- 3. duplicated sections ----------------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _blocks(section: Section) -> list[str]:
    """A section's content as blocks: bullets (list sections) or blank-line-separated paragraphs."""
    body = list(section.lines)
    if section.kind in _LIST_KINDS:
        # Parsed on its own so that a fenced block inside the section is code, never bullets.
        found = [item.text for item in parse("".join(body)).list_items(section.kind) if not item.is_placeholder]
        if found:
            return found
    # Runs of blocks (as the markdown scanner finds them) not separated by a blank line or a rule: a paragraph with
    # the bullets right under it is one block, and a code fence with blank lines inside stays whole.
    runs: list[tuple[int, int]] = []
    for block in outline("".join(body[1:])):
        if block.kind == RULE:
            continue
        if runs and block.start == runs[-1][1]:
            runs[-1] = (runs[-1][0], block.end)
        else:
            runs.append((block.start, block.end))
    return ["".join(body[1 + a : 1 + b]) for a, b in runs]


def _merge_duplicate_sections(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
    archived: list[str] = []
    fixes: list[Fix] = []
    skip: set[int] = set()
    while True:
        pair = _next_duplicate(doc, skip)
        if pair is None:
            return doc, archived, fixes
        first_index, copy_index = pair
        first, copy = doc.sections[first_index], doc.sections[copy_index]
        name = SECTION_KINDS[copy.kind][0][3:]
        if copy.kind == "machine_state" and len(doc.machine_state) <= 1:  # as anomalies reads "no rows"
            skip.add(copy.start)  # which of two tables is right, when the first has no rows, is a judgment
            continue
        if copy.kind == "history":
            new = _merge_history(doc, first_index, copy_index)
            moved = "its entries moved into the first"
        elif copy.kind == "machine_state":
            new = _without_section(doc, copy_index)
            moved = "the scheduler reads only the first table"
        else:
            have = {_norm(block) for block in _blocks(first)}
            missing = [block for block in _blocks(copy) if _norm(block) not in have]
            new = _append_blocks(
                _without_section(doc, copy_index), first_index, missing, list_kind=copy.kind in _LIST_KINDS
            )
            moved = (
                f"{plural(len(missing), 'block')} it alone had moved into the first"
                if missing
                else "the first has all of it"
            )
        if not _sound(doc, new, removed=1):
            skip.add(copy.start)  # the merge would change more than the copy (e.g. carry half a code fence): left
            continue
        archived.append(copy.text)
        fixes.append(Fix("duplicate-section", f"a second '{name}' section archived; {moved}"))
        doc = new


def _sound(old: StateDocument, new: StateDocument, *, removed: int) -> bool:
    """Whether ``new`` is ``old`` with ``removed`` sections fewer and nothing else disturbed: no block left open, the
    same Machine State, every iteration still covered, the other sections still there."""
    if new.unclosed_block is not None or new.machine_state != old.machine_state:
        return False
    if len(new.sections) != len(old.sections) - removed:
        return False
    return holds([s for entry in new.history for s in entry.spans], [s for entry in old.history for s in entry.spans])


def _next_duplicate(doc: StateDocument, skip: set[int]) -> tuple[int, int] | None:
    seen: dict[str, int] = {}
    for index, section in enumerate(doc.sections):
        if section.kind not in SECTION_KINDS:
            continue
        if section.kind in seen and section.start not in skip:
            return seen[section.kind], index
        seen.setdefault(section.kind, index)
    return None


def _without_section(doc: StateDocument, index: int) -> StateDocument:
    lines = split_lines(doc.render())
    section = doc.sections[index]
    del lines[section.start : section.start + len(section.lines)]
    if section.start > 0 and section.start <= len(lines) and not lines[section.start - 1].endswith(("\n", "\r")):
        lines[section.start - 1] += doc.newline
    return parse("".join(lines))


def _append_blocks(doc: StateDocument, index: int, blocks: Sequence[str], *, list_kind: bool) -> StateDocument:
    """``blocks`` added at the end of section ``index``'s content (before its trailing blank lines and rule)."""
    if not blocks:
        return doc
    lines = split_lines(doc.render())
    section = doc.sections[index]
    # Before the section's trailing blank lines and rules (the separator before the next section).
    content, _ = split_tail("".join(section.lines))
    end = section.start + max(1, len(split_lines(content)))
    nl = doc.newline
    if not lines[end - 1].endswith(("\n", "\r")):
        lines[end - 1] += nl
    added: list[str] = []
    for block in blocks:
        text = block if block.endswith(("\n", "\r")) else block + nl
        added.extend(split_lines(text) if list_kind else [nl, *split_lines(text)])
    if list_kind and not bullets.items(list(section.lines)):
        added.insert(0, nl)
    placeholder = [item for item in bullets.items(list(section.lines)) if item.is_placeholder] if list_kind else []
    lines[end:end] = added
    if placeholder:
        # The template's "- *(none yet)*" is not user text: real bullets replace it.
        item = placeholder[0]
        del lines[section.start + item.start : section.start + item.end]
    return parse("".join(lines))


def _merge_history(doc: StateDocument, first_index: int, copy_index: int) -> StateDocument:
    """The copy's entries that the first history section lacks, moved into it, newest first."""
    copy = doc.sections[copy_index]
    entries = parse("".join(copy.lines)).history
    have = {_norm(entry.raw) for entry in doc.history}
    moving = [entry.raw for entry in entries if _norm(entry.raw) not in have]
    intro = "".join(copy.lines)
    if entries:
        intro = intro[: intro.index(entries[0].raw)] if entries[0].raw in intro else intro
    extra = [block for block in _blocks(Section(copy.kind, copy.title, 2, 0, tuple(split_lines(intro))))]
    have_text = {_norm(block) for block in _blocks(doc.sections[first_index])}
    extra = [block for block in extra if _norm(block) not in have_text]
    doc = _without_section(doc, copy_index)
    if extra:
        doc = _append_blocks_before_entries(doc, extra)
    if not moving:
        return doc
    if not doc.history:
        # The first history section has no entries yet: the moved ones become its entries, in their order.
        block = join_entries([(raw, True) for raw in moving], "", doc.newline)
        return doc.with_entry(block if block.endswith(("\n\n", "\r\n\r\n")) else block + doc.newline)
    return _rewrite_entries(doc, lambda raws: _merged_in(raws, moving))


def _append_blocks_before_entries(doc: StateDocument, blocks: Sequence[str]) -> StateDocument:
    """Paragraphs of a history section's intro kept above the entries of the first one."""
    if not doc.history:
        index = next(i for i, s in enumerate(doc.sections) if s.kind == "history")
        return _append_blocks(doc, index, blocks, list_kind=False)
    text = doc.render()
    at = _offset(doc, doc.entry_lines[0])
    nl = doc.newline
    added = "".join((b if b.endswith(("\n", "\r")) else b + nl) + nl for b in blocks)
    return parse(text[:at] + added + text[at:])


def _merged_in(raws: list[str], moving: list[str]) -> list[str]:
    """``raws`` (the first section's entries, in their order) with each of ``moving`` placed above the first entry
    that is older than it; entries without numbers travel with the entry above them."""
    out = list(raws)
    for raw in moving:
        spans = parse_entry(raw).spans
        if not spans:
            out.append(raw)
            continue
        newest = spans[-1][1]
        at = next(
            (i for i, existing in enumerate(out) if (c := parse_entry(existing).spans) and c[-1][1] < newest),
            len(out),
        )
        out.insert(at, raw)
    return out


# -- the history region, rewritten -----------------------------------------------------------------------------------


def _offset(doc: StateDocument, line: int) -> int:
    """Character offset of 0-based ``line`` in the document's text."""
    return sum(len(part) for part in split_lines(doc.render())[:line])


def _rewrite_entries(doc: StateDocument, fn: Callable[[list[str]], list[str]]) -> StateDocument:
    """The document with its history entries replaced by ``fn(raws)``; each raw is one entry's text, the last one
    without the section's trailing blank lines and rule, which stay where they are."""
    entries = doc.history
    if not entries:
        return doc
    text = doc.render()
    joined = "".join(entry.raw for entry in entries)
    start = _offset(doc, doc.entry_lines[0])
    assert text[start : start + len(joined)] == joined
    raws = [entry.raw for entry in entries]
    raws[-1], tail = split_tail(raws[-1])
    new = fn(raws)
    region = join_entries([(raw, True) for raw in new], tail, doc.newline)
    return parse(text[:start] + region + text[start + len(joined) :])


# -- 4. duplicated entries -----------------------------------------------------------------------------------------


def _drop_duplicate_entries(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
    entries = doc.history
    complete: set[int] = set()
    for entry in entries:
        if isinstance(entry, Iteration) and not entry.partial:
            complete.update(entry.covers)
    seen: set[str] = set()
    drop: set[int] = set()
    fixes: list[Fix] = []
    archived: list[str] = []
    for index, entry in enumerate(entries):
        key = _norm(entry.raw)
        if isinstance(entry, Iteration) and entry.partial and set(entry.covers) <= complete:
            drop.add(index)
            fixes.append(Fix("duplicate-iteration", f"the (partial) copy of {_label(entry)} archived; the "
                                                    "complete entry stays"))  # fmt: skip
        elif entry.covers and key in seen:
            drop.add(index)
            fixes.append(Fix("duplicate-iteration", f"a repeated copy of {_label(entry)} archived"))
        else:
            seen.add(key)
            continue
        archived.append(entry.raw)
    if not drop:
        return doc, [], []
    kept = [raw for index, raw in enumerate(_raws(doc)) if index not in drop]
    return _rewrite_entries(doc, lambda _raws_: kept), archived, fixes


def _raws(doc: StateDocument) -> list[str]:
    raws = [entry.raw for entry in doc.history]
    if raws:
        raws[-1], _ = split_tail(raws[-1])
    return raws


def _label(entry: Entry) -> str:
    if isinstance(entry, IterationRange):
        return f"iterations {entry.first}–{entry.last}"
    covers = list(entry.covers)
    return "iteration " + "+".join(str(n) for n in covers) if covers else "an entry"


# -- 5. overlapping range lines ------------------------------------------------------------------------------------


def _merge_overlapping_ranges(
    doc: StateDocument, program: str | None, archive: str | None = None
) -> tuple[StateDocument, list[str], list[Fix]]:
    entries = doc.history
    ranged = sorted(
        ((index, entry) for index, entry in enumerate(entries) if isinstance(entry, IterationRange)),
        key=lambda pair: (pair[1].first, pair[1].last),
    )
    groups: list[list[tuple[int, IterationRange]]] = []
    for index, entry in ranged:
        if groups and entry.first <= max(e.last for _, e in groups[-1]):
            groups[-1].append((index, entry))
        else:
            groups.append([(index, entry)])
    groups = [group for group in groups if len(group) > 1]
    if not groups:
        return doc, [], []
    direction = state_direction(doc.machine_state)
    replace_at: dict[int, str] = {}
    drop: set[int] = set()
    archived: list[str] = []
    fixes: list[Fix] = []
    nl = doc.newline
    for group in groups:
        band = merge_bands((band_from_range(entry) for _, entry in group), direction)
        line = render_band(band, program=program, text_cap=RANGE_TEXT_CAP, newline=nl, archive=archive)
        top = min(index for index, _ in group)  # where the newest-first history has the merged line
        replace_at[top] = line
        drop.update(index for index, _ in group if index != top)
        archived.extend(entry.raw for _, entry in sorted(group))
        spans = ", ".join(f"{e.first}–{e.last}" for _, e in group)
        fixes.append(Fix("overlapping-ranges", f"range lines {spans} merged into one ({band.first}–{band.last})"))
    raws = _raws(doc)
    kept = [replace_at.get(index, raw) for index, raw in enumerate(raws) if index not in drop]
    # A merged line takes the place of the newest range of its group; the order stays newest first.
    return _rewrite_entries(doc, lambda _raws_: kept), archived, fixes
