"""Plain-data views of a document for ``show``/``--json`` output."""

from __future__ import annotations

from typing import Any

from statefile.model.document import StateDocument


def describe(doc: StateDocument) -> dict[str, Any]:
    """Structure, machine state, history summary and warnings of ``doc`` as JSON-ready data."""
    entries = doc.history
    iterations = [e for e in entries if e.kind == "iteration"]
    ranges = [e for e in entries if e.kind == "range"]
    return {
        "size_bytes": doc.size,
        "sections": [{"kind": s.kind, "title": s.title, "line": s.start + 1, "bytes": s.size} for s in doc.sections],
        "machine_state": doc.machine_state,
        "history": {
            "iterations": len(iterations),
            "ranges": len(ranges),
            "other": len(entries) - len(iterations) - len(ranges),
            "highest_iteration": doc.highest_iteration,
            "newest": entries[0].heading if entries else None,
        },
        "warnings": [str(w) for w in doc.warnings],
    }
