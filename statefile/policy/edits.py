"""What a maintainer's hand edit took out of a file (entries and list items not in the new text verbatim, a
corrected entry's old wording too), so ``statefile edit`` archives it in the same commit instead of losing it."""

from __future__ import annotations

from statefile.model.document import StateDocument

_LIST_KINDS = ("lessons", "foreclosed", "future")


def removed_by_edit(old: StateDocument, new: StateDocument) -> str:
    """The entries and list items of ``old`` that ``new`` no longer holds, verbatim, oldest entry last ("")."""
    kept = new.render()
    texts = [entry.raw for entry in old.history]
    texts += [item.text for kind in _LIST_KINDS for item in old.list_items(kind) if not item.is_placeholder]
    return "".join(t if t.endswith("\n") else t + "\n" for t in texts if t.strip() and t.strip() not in kept)
