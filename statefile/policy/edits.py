"""What a maintainer's hand edit took out of a file, so it can go to the archive instead of being lost.

``statefile edit`` commits whatever the maintainer saves; an edit that deletes history entries or lessons (on
purpose or by a slip of the editor) would otherwise drop them for good.  Entries and list items of the old file
that do not appear, verbatim, in the new one are archived in the same commit.  An entry whose text was corrected
counts as removed too: its old wording goes to the archive and the new one stays in the file.
"""

from __future__ import annotations

from statefile.model.document import StateDocument

# The list sections whose bullets are user text worth keeping.
_LIST_KINDS = ("lessons", "foreclosed", "future")


def removed_by_edit(old: StateDocument, new: StateDocument) -> str:
    """The entries and list items of ``old`` that ``new`` no longer holds, verbatim, oldest entry last ("")."""
    kept = new.render()
    removed: list[str] = []
    for entry in old.history:
        if entry.raw.strip() and entry.raw.strip() not in kept:
            removed.append(entry.raw if entry.raw.endswith("\n") else entry.raw + "\n")
    for kind in _LIST_KINDS:
        for item in old.list_items(kind):
            if not item.is_placeholder and item.text.strip() and item.text.strip() not in kept:
                removed.append(item.text if item.text.endswith("\n") else item.text + "\n")
    return "".join(removed)
