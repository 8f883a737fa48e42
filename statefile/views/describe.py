"""Plain-data views of a document for ``show``/``--json`` output."""

from __future__ import annotations

from collections import Counter
from typing import Any

from statefile.model.document import StateDocument


def describe(doc: StateDocument) -> dict[str, Any]:
    """Structure, machine state, history summary and warnings of ``doc`` as JSON-ready data."""
    entries = doc.history
    kinds = Counter(entry.kind for entry in entries)
    return {
        "size_bytes": doc.size,
        "sections": [{"kind": s.kind, "title": s.title, "line": s.start + 1, "bytes": s.size} for s in doc.sections],
        "machine_state": doc.machine_state,
        "history": {
            "iterations": kinds["iteration"],
            "ranges": kinds["range"],
            "other": len(entries) - kinds["iteration"] - kinds["range"],
            "highest_iteration": doc.highest_iteration,
            "newest": entries[0].heading if entries else None,
        },
        "warnings": [str(w) for w in doc.warnings],
    }
