"""Repair: fix what ``check`` reports that has only one right answer, archiving every byte it takes out.

``repair(doc, program=…)``, in order: a drifted known heading (``## Machine State``) gets the exact one back; entries
without a history heading get one; a duplicated section's blocks the first lacks move into it and the copy is
archived (a second Machine State table whole, unless the first has no rows); a repeated or ``(partial)`` entry a
complete one covers is archived; overlapping range lines merge into one canonical line.  The rest stays in
:attr:`RepairResult.remaining`; a file with an unclosed block is not edited; repairing again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from statefile.defaults import RANGE_TEXT_CAP
from statefile.model import lists as bullets
from statefile.model.anomalies import REPAIRABLE, Anomaly
from statefile.model.blocks import RULE, content_end, outline
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


class Fix(Anomaly):
    """One repair: the ``check`` code it answers and what was done."""


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
            continue  # it would disturb something else (an open block, the table, coverage)
        doc = new
        archived.extend(removed)
        fixes.extend(done)
    archive = ""
    for piece in archived:
        archive += piece if piece.endswith(("\n", "\r")) else piece + "\n"
        if not archive.endswith(("\n\n", "\r\n\r\n")):
            archive += "\n"
    return RepairResult(doc, archive, tuple(fixes), doc.warnings)


def _restore_headings(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
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
        bom = "\ufeff" if line.startswith("\ufeff") else ""
        lines[section.start] = bom + canonical + line_ending(line)
        code = "machine-state-heading" if section.kind == "machine_state" else "heading-drift"
        fixes.append(Fix(code, f"'## {section.title}' is '{canonical}' again"))
        # The old heading as text (a "##" line in the archive would read as a chunk heading).
        archived.append(f"- heading restored to {canonical[3:]}, it was: {line_body(line).lstrip(chr(0xFEFF))}\n")
    return (parse("".join(lines)) if fixes else doc), archived, fixes


def _history_heading(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
    if not doc.history_misplaced:
        return doc, [], []
    new, _ = doc.with_history_section()
    heading = SECTION_KINDS["history"][0]
    return new, [], [Fix("missing-history-heading", f"'{heading}' added above the first iteration entry")]


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
    for block in outline("".join(body[1:])):
        if block.kind == RULE:
            continue
        if runs and block.start == runs[-1][1]:
            runs[-1] = (runs[-1][0], block.end)
        else:
            runs.append((block.start, block.end))
    return ["".join(body[1 + a : 1 + b]) for a, b in runs]


def _missing(first: Section, copy: Section) -> list[str]:
    have = {_norm(block) for block in _blocks(first)}
    return [block for block in _blocks(copy) if _norm(block) not in have]


def _merge_duplicate_sections(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
    archived: list[str] = []
    fixes: list[Fix] = []
    skip: set[int] = set()
    while True:
        if (pair := _next_duplicate(doc, skip)) is None:
            return doc, archived, fixes
        first_index, copy_index = pair
        first, copy = doc.sections[first_index], doc.sections[copy_index]
        name = SECTION_KINDS[copy.kind][0][3:]
        if copy.kind == "machine_state" and len(doc.machine_state) <= 1:  # no rows: which table is right is a judgment
            skip.add(copy.start)
            continue
        if copy.kind == "history":
            new = _merge_history(doc, first_index, copy_index)
            moved = "its entries moved into the first"
        elif copy.kind == "machine_state":
            new = _without_section(doc, copy_index)
            moved = "the scheduler reads only the first table"
        else:
            missing = _missing(first, copy)
            new = _append_blocks(
                _without_section(doc, copy_index), first_index, missing, list_kind=copy.kind in _LIST_KINDS
            )
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
    section = doc.sections[index]
    return doc.with_lines(section.start, section.start + len(section.lines), [])


def _append_blocks(doc: StateDocument, index: int, blocks: Sequence[str], *, list_kind: bool) -> StateDocument:
    """``blocks`` added at the end of section ``index``'s content (before its trailing blank lines and rule)."""
    if not blocks:
        return doc
    section = doc.sections[index]
    end = section.start + content_end(section.lines)
    nl = doc.newline
    added: list[str] = []
    for block in blocks:
        text = block if block.endswith(("\n", "\r")) else block + nl
        added.extend(split_lines(text) if list_kind else [nl, *split_lines(text)])
    if list_kind and not bullets.items(list(section.lines)):
        added.insert(0, nl)
    placeholder = [item for item in bullets.items(list(section.lines)) if item.is_placeholder] if list_kind else []
    doc = doc.with_lines(end, end, added)
    if placeholder:  # real bullets replace the template's "- *(none yet)*"
        doc = doc.with_lines(section.start + placeholder[0].start, section.start + placeholder[0].end, [])
    return doc


def _merge_history(doc: StateDocument, first_index: int, copy_index: int) -> StateDocument:
    """The copy's entries that the first history section lacks, moved into it, newest first."""
    copy = doc.sections[copy_index]
    entries = parse(copy.text).history
    have = {_norm(entry.raw) for entry in doc.history}
    moving = [entry.raw for entry in entries if _norm(entry.raw) not in have]
    intro = copy.text.partition(entries[0].raw)[0] if entries else copy.text
    extra = _missing(doc.sections[first_index], Section(copy.kind, copy.title, 2, 0, tuple(split_lines(intro))))
    doc = _without_section(doc, copy_index)
    if extra:
        doc = _append_blocks_before_entries(doc, extra)
    if not moving:
        return doc
    if not doc.history:  # the moved entries become the first section's, in their order
        block = join_entries([(raw, True) for raw in moving], "", doc.newline)
        return doc.with_entry(block if block.endswith(("\n\n", "\r\n\r\n")) else block + doc.newline)
    return _rewrite_entries(doc, lambda raws: _merged_in(raws, moving))


def _append_blocks_before_entries(doc: StateDocument, blocks: Sequence[str]) -> StateDocument:
    """Paragraphs of a history section's intro kept above the entries of the first one."""
    if not doc.history:
        index = next(i for i, s in enumerate(doc.sections) if s.kind == "history")
        return _append_blocks(doc, index, blocks, list_kind=False)
    nl = doc.newline
    added = [line for b in blocks for line in split_lines((b if b.endswith(("\n", "\r")) else b + nl) + nl)]
    return doc.with_lines(doc.entry_lines[0], doc.entry_lines[0], added)


def _merged_in(raws: list[str], moving: list[str]) -> list[str]:
    """``raws`` with each of ``moving`` placed above the first older entry (one without numbers: at the end)."""
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


def _rewrite_entries(doc: StateDocument, fn: Callable[[list[str]], list[str]]) -> StateDocument:
    """The document with its history entries replaced by ``fn(raws)`` (the last without the section's tail)."""
    located = doc.located_history
    if not located:
        return doc
    lines = split_lines(doc.render())
    raws = [entry.raw for entry in doc.history]
    raws[-1], tail = split_tail(raws[-1])
    region = join_entries([(raw, True) for raw in fn(raws)], tail, doc.newline)
    return parse("".join(lines[: located[0].start]) + region + "".join(lines[located[-1].end :]))


def _drop_duplicate_entries(doc: StateDocument) -> tuple[StateDocument, list[str], list[Fix]]:
    entries = doc.history
    complete = {n for entry in entries if isinstance(entry, Iteration) and not entry.partial for n in entry.covers}
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
    return _rewrite_entries(doc, lambda raws: [r for i, r in enumerate(raws) if i not in drop]), archived, fixes


def _label(entry: Entry) -> str:
    if isinstance(entry, IterationRange):
        return f"iterations {entry.first}–{entry.last}"
    covers = list(entry.covers)
    return "iteration " + "+".join(str(n) for n in covers) if covers else "an entry"


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
    new = _rewrite_entries(doc, lambda raws: [replace_at.get(i, r) for i, r in enumerate(raws) if i not in drop])
    return new, archived, fixes
