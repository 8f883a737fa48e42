"""Text helpers (statefile.model.text)."""

from __future__ import annotations

from statefile.model.text import clip


def test_clip_never_doubles_an_ellipsis() -> None:
    """As seen in issue 11: clip never doubles an ellipsis."""
    assert clip("word… word… word… word… word… word…", 12) == "word… word…"
