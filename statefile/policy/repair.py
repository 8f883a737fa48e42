"""Repair: fix what ``check`` reports that has only one right answer, archiving every byte it takes out.

In order: a drifted known heading gets the exact one back; entries without a history heading get one; a duplicated
section's blocks the first lacks move into it and the copy is archived (a second Machine State table whole, unless
the first has no rows); a repeated or ``(partial)`` entry a complete one covers is archived; overlapping range lines
merge into one.  The rest stays in :attr:`RepairResult.remaining`; a file with an unclosed block is not edited.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from statefile.defaults import RANGE_TEXT_CAP
from statefile.model import document as bullets
from statefile.model.blocks import RULE, content_end, outline
from statefile.model.document import Anomaly, Section, StateDocument, parse
from statefile.model.history import Entry, Iteration, IterationRange, holds, parse_entry
from statefile.model.patterns import heading_key, state_direction
from statefile.model.template import SECTION_KINDS
from statefile.model.text import line_body, line_ending, split_lines
from statefile.numbers import plural
from statefile.policy.compaction import join_entries, split_tail
from statefile.policy.ranges import band_from_range, merge_bands, render_band

_LIST_KINDS = ("lessons", "foreclosed", "future")


Fix = Anomaly  # one repair: the ``check`` code it answers and what was done
_Step = tuple[StateDocument, list[str], list[Fix]]  # a step's document, what it archived and what it fixed


@dataclass(frozen=True)
class RepairResult:
    """The repaired document, the text taken out (verbatim), what was fixed and what is left for a person."""

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
    """Repair ``doc`` (see the module docstring); ``program`` and ``archive`` name where range lines point to."""
    if doc.unclosed_block is not None:
        return RepairResult(doc, "", (), doc.warnings)
    fixes: list[Fix] = []
    archived = ""
    merge_ranges = partial(_merge_overlapping_ranges, program=program, archive=archive)
    for step in (_restore_headings, _history_heading, _merge_duplicate_sections, _drop_duplicate_entries, merge_ranges):
        new, removed, done = step(doc)
        if done and not _sound(doc, new, removed=len(doc.sections) - len(new.sections)):
            continue  # it would disturb something else (an open block, the table, coverage)
        doc = new
        fixes.extend(done)
        for piece in removed:  # each followed by a blank line
            archived += piece if piece.endswith(("\n", "\r")) else piece + "\n"
            if not archived.endswith(("\n\n", "\r\n\r\n")):
                archived += "\n"
    return RepairResult(doc, archived, tuple(fixes), doc.warnings)


def removed_by_edit(old: StateDocument, new: StateDocument) -> str:
    """The entries and list items of ``old`` that ``new`` no longer holds verbatim (``""``: none)."""
    kept = new.render()
    texts = [entry.raw for entry in old.history]
    texts += [item.text for kind in _LIST_KINDS for item in old.list_items(kind) if not item.is_placeholder]
    return "".join(t if t.endswith("\n") else t + "\n" for t in texts if t.strip() and t.strip() not in kept)


def _restore_headings(doc: StateDocument) -> _Step:
    lines = split_lines(doc.render())
    fixes = []
    archived = []
    for section in doc.sections:
        if section.kind not in SECTION_KINDS or section.title is None or section.level != 2:
            continue
        canonical = SECTION_KINDS[section.kind][0]
        if section.title == canonical[3:] or heading_key(section.title) != heading_key(canonical[3:]):
            continue  # exact, or other words ("## Lessons"): a name someone chose
        line = lines[section.start]
        lines[section.start] = "\ufeff" * line.startswith("\ufeff") + canonical + line_ending(line)  # a BOM stays
        code = "machine-state-heading" if section.kind == "machine_state" else "heading-drift"
        fixes.append(Fix(code, f"'## {section.title}' is '{canonical}' again"))
        # The old heading as text (a "##" line in the archive would read as a chunk heading).
        archived.append(f"- heading restored to {canonical[3:]}, it was: {line_body(line).lstrip(chr(0xFEFF))}\n")
    return (parse("".join(lines)) if fixes else doc), archived, fixes


def _history_heading(doc: StateDocument) -> _Step:
    fix = Fix("missing-history-heading", f"'{SECTION_KINDS['history'][0]}' added above the first iteration entry")
    return (doc.with_section("history")[0], [], [fix]) if doc.history_misplaced else (doc, [], [])


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _blocks(section: Section) -> list[str]:
    """A section's content as blocks: bullets (list sections) or blank-line-separated paragraphs."""
    body = list(section.lines)
    if section.kind in _LIST_KINDS:
        found = [item.text for item in parse("".join(body)).list_items(section.kind) if not item.is_placeholder]
        if found:
            return found
    # Runs of blocks not separated by a blank line or a rule (a paragraph and its bullets, a whole fence).
    runs: list[tuple[int, int]] = []
    for block in (block for block in outline("".join(body[1:])) if block.kind != RULE):
        if runs and block.start == runs[-1][1]:
            runs[-1] = (runs[-1][0], block.end)
        else:
            runs.append((block.start, block.end))
    return ["".join(body[1 + a : 1 + b]) for a, b in runs]


def _missing(first: Section, copy: Section) -> list[str]:
    have = {_norm(block) for block in _blocks(first)}
    return [block for block in _blocks(copy) if _norm(block) not in have]


def _merge_duplicate_sections(doc: StateDocument) -> _Step:
    archived: list[str] = []
    fixes: list[Fix] = []
    skip: set[int] = set()
    while True:
        kinds = [section.kind for section in doc.sections]
        copies = [i for i, s in enumerate(doc.sections) if s.kind in SECTION_KINDS and s.kind in kinds[:i]]
        if (copy_index := next((i for i in copies if doc.sections[i].start not in skip), None)) is None:
            return doc, archived, fixes
        first_index = kinds.index(doc.sections[copy_index].kind)
        first, copy = doc.sections[first_index], doc.sections[copy_index]
        name = SECTION_KINDS[copy.kind][0][3:]
        without = doc.with_lines(copy.start, copy.start + len(copy.lines), [])
        if copy.kind == "history":
            new, moved = _merge_history(without, first_index, copy), "its entries moved into the first"
        elif copy.kind == "machine_state":  # no rows: which table is right is a judgment (``new`` unsound: left)
            new, moved = without if len(doc.machine_state) > 1 else doc, "the scheduler reads only the first table"
        else:
            missing = _missing(first, copy)
            new = _append_blocks(without, first_index, missing, list_kind=copy.kind in _LIST_KINDS)
            alone = f"{plural(len(missing), 'block')} it alone had moved into the first"
            moved = alone if missing else "the first has all of it"
        if not _sound(doc, new, removed=1):  # it would change more than the copy (half a fence): left
            skip.add(copy.start)
            continue
        archived.append(copy.text)
        fixes.append(Fix("duplicate-section", f"a second '{name}' section archived; {moved}"))
        doc = new


def _sound(old: StateDocument, new: StateDocument, *, removed: int) -> bool:
    """Whether ``new`` is ``old`` with ``removed`` sections fewer and no block open, the table and coverage kept."""
    kept = new.unclosed_block is None and new.machine_state == old.machine_state
    spans = [s for entry in new.history for s in entry.spans], [s for entry in old.history for s in entry.spans]
    return kept and len(new.sections) == len(old.sections) - removed and holds(*spans)


def _append_blocks(doc: StateDocument, index: int, blocks: Sequence[str], *, list_kind: bool) -> StateDocument:
    """``blocks`` added at the end of section ``index``'s content (before its trailing blank lines and rule)."""
    if not blocks:
        return doc
    section, nl = doc.sections[index], doc.newline
    end = section.start + content_end(section.lines)
    texts = [block if block.endswith(("\n", "\r")) else block + nl for block in blocks]
    added = [line for text in texts for line in ([] if list_kind else [nl]) + split_lines(text)]  # paragraphs: spaced
    if list_kind and not bullets.items(list(section.lines)):
        added.insert(0, nl)
    placeholder = [item for item in bullets.items(list(section.lines)) if item.is_placeholder] if list_kind else []
    doc = doc.with_lines(end, end, added)
    if placeholder:  # real bullets replace the template's "- *(none yet)*"
        doc = doc.with_lines(section.start + placeholder[0].start, section.start + placeholder[0].end, [])
    return doc


def _merge_history(doc: StateDocument, first_index: int, copy: Section) -> StateDocument:
    """The entries of ``copy`` (taken out of ``doc``) that the first history section lacks, moved into it."""
    entries = parse(copy.text).history
    have = {_norm(entry.raw) for entry in doc.history}
    moving = [entry.raw for entry in entries if _norm(entry.raw) not in have]
    intro = copy.text.partition(entries[0].raw)[0] if entries else copy.text
    extra = _missing(doc.sections[first_index], Section(copy.kind, copy.title, 2, 0, tuple(split_lines(intro))))
    nl = doc.newline
    if extra and not doc.history:  # the intro's paragraphs go above the first section's entries
        doc = _append_blocks(doc, first_index, extra, list_kind=False)  # the copy came after it
    elif extra:
        added = [line for b in extra for line in split_lines((b if b.endswith(("\n", "\r")) else b + nl) + nl)]
        doc = doc.with_lines(doc.located_history[0].start, doc.located_history[0].start, added)
    if not moving:
        return doc
    if not doc.history:  # the moved entries become the first section's, in their order
        block = join_entries([(raw, True) for raw in moving], "", nl)
        return doc.with_entry(block if block.endswith(("\n\n", "\r\n\r\n")) else block + nl)
    return _rewrite_entries(doc, lambda raws: _merged_in(raws, moving))


def _merged_in(raws: list[str], moving: list[str]) -> list[str]:
    """``raws`` with each of ``moving`` placed above the first older entry (one without numbers: at the end)."""
    out = list(raws)
    for raw in moving:
        newest = spans[-1][1] if (spans := parse_entry(raw).spans) else None
        older = (
            i for i, e in enumerate(out) if newest is not None and (c := parse_entry(e).spans) and c[-1][1] < newest
        )
        out.insert(next(older, len(out)), raw)
    return out


def _rewrite_entries(doc: StateDocument, fn: Callable[[list[str]], list[str]]) -> StateDocument:
    """The document with its history entries replaced by ``fn(raws)`` (the last without the section's tail)."""
    if not (located := doc.located_history):
        return doc
    raws = [entry.raw for entry in doc.history]
    raws[-1], tail = split_tail(raws[-1])
    region = join_entries([(raw, True) for raw in fn(raws)], tail, doc.newline)
    return doc.with_lines(located[0].start, located[-1].end, split_lines(region))


def _drop_duplicate_entries(doc: StateDocument) -> _Step:
    entries = doc.history
    complete = {n for entry in entries if isinstance(entry, Iteration) and not entry.partial for n in entry.covers}
    seen: set[str] = set()
    drop: dict[int, str] = {}  # index -> what was done
    for index, entry in enumerate(entries):
        if isinstance(entry, Iteration) and entry.partial and set(entry.covers) <= complete:
            drop[index] = f"the (partial) copy of {_label(entry)} archived; the complete entry stays"
        elif entry.covers and _norm(entry.raw) in seen:
            drop[index] = f"a repeated copy of {_label(entry)} archived"
        else:
            seen.add(_norm(entry.raw))
    new = _rewrite_entries(doc, lambda raws: [r for i, r in enumerate(raws) if i not in drop]) if drop else doc
    return new, [entries[i].raw for i in drop], [Fix("duplicate-iteration", why) for why in drop.values()]


def _label(entry: Entry) -> str:
    if isinstance(entry, IterationRange):
        return f"iterations {entry.first}–{entry.last}"
    return "iteration " + "+".join(map(str, entry.covers)) if entry.covers else "an entry"


def _merge_overlapping_ranges(doc: StateDocument, program: str | None, archive: str | None = None) -> _Step:
    ranged = [(index, entry) for index, entry in enumerate(doc.history) if isinstance(entry, IterationRange)]
    groups: list[list[tuple[int, IterationRange]]] = []
    for index, entry in sorted(ranged, key=lambda pair: (pair[1].first, pair[1].last)):
        if groups and entry.first <= max(e.last for _, e in groups[-1]):
            groups[-1].append((index, entry))
        else:
            groups.append([(index, entry)])
    direction = state_direction(doc.machine_state)
    replace_at: dict[int, str] = {}  # "": dropped
    archived: list[str] = []
    fixes: list[Fix] = []
    for group in (group for group in groups if len(group) > 1):
        band = merge_bands((band_from_range(entry) for _, entry in group), direction)
        line = render_band(band, program=program, text_cap=RANGE_TEXT_CAP, newline=doc.newline, archive=archive)
        replace_at |= dict.fromkeys((index for index, _ in group), "")
        replace_at[min(index for index, _ in group)] = line  # where the newest-first history has the merged line
        archived.extend(entry.raw for _, entry in sorted(group))
        spans = ", ".join(f"{e.first}–{e.last}" for _, e in group)
        fixes.append(Fix("overlapping-ranges", f"range lines {spans} merged into one ({band.first}–{band.last})"))
    if not fixes:
        return doc, [], []
    new = _rewrite_entries(doc, lambda raws: [text for i, r in enumerate(raws) if (text := replace_at.get(i, r))])
    return new, archived, fixes
