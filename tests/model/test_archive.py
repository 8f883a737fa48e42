"""The archive (statefile.model.archive): chunks, parts, entries kept whole."""

from __future__ import annotations


def test_an_entry_longer_than_many_parts_is_archived_whole_and_fast() -> None:
    """A 5 MB one-line entry was cut into parts by scanning the whole rest of the text once per part (quadratic)."""
    from statefile.model.archive import _take

    text = "### Iteration 9 — " + "é" * 200_000 + "y" * 300_000 + "\nnext line\n"
    pieces = []
    rest = text
    while rest:
        head, rest = _take(rest, 30720)
        assert 0 < len(head.encode()) <= 30720
        pieces.append(head)
    assert "".join(pieces) == text
    assert all(not p.endswith("\udcc3") for p in pieces)  # never a character split between parts
