"""What the upstream scheduler's ``autoloop.json`` should say about state-file sizes, and writing it safely.

The upstream scheduler (githubnext/autoloop ``workflows/scripts/autoloop_scheduler.py``) writes
``/tmp/gh-aw/autoloop.json`` with ``selected``, ``selected_file``, ``selected_issue``, ``selected_target_metric``,
``selected_metric_direction``, ``state_file_size_bytes`` (the selected program's file size, 0 when none),
``state_file_max_bytes`` (a constant 30720), ``issue_programs``, ``deferred``, ``skipped``, ``unconfigured``,
``no_programs``, ``head_branch`` and ``existing_pr``.  ``statefile report`` keeps every key it finds, corrects the
two size keys from the real branch and the configured budget, and adds a ``statefile`` object with every program.

:func:`program_report` and :func:`merge_report` are pure; the two file helpers are the I/O edge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statefile import __version__
from statefile.defaults import AGGRESSIVE_AT, DEFAULT_MAX_BYTES
from statefile.errors import UsageError
from statefile.jsontext import JsonError, parse_json
from statefile.store.atomic import INPUT_LIMIT, output_error, read_regular_file, write_output

if TYPE_CHECKING:
    from statefile.model.document import StateDocument

#: The upstream scheduler's keys for the selected program's size and budget.
SIZE_KEY = "state_file_size_bytes"
MAX_KEY = "state_file_max_bytes"
#: Our own key, so we never clash with one upstream adds later.
STATEFILE_KEY = "statefile"
_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def program_report(
    name: str,
    size: int,
    max_bytes: int,
    doc: StateDocument | None,
    *,
    aggressive_at: float = AGGRESSIVE_AT,
    state: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One program's entry: its size against the budget and the scheduler's view of its Machine State.

    ``headroom`` is negative when the file is over budget.  ``needs_compaction`` is true above ``aggressive_at``
    of the budget, where the upstream prompt asks for aggressive compaction.  ``doc is None`` (no file yet) reads
    as a brand-new program, as the scheduler reads it.  ``state``, when given, is the Machine State already read
    (:func:`statefile.model.document.read_machine_state`) and ``doc`` is not needed.
    """
    if state is None:
        state = doc.machine_state if doc is not None else {}
    count = state.get("iteration_count")
    return {
        "file": f"{name}.md",
        "size": size,
        "max": max_bytes,
        "headroom": max_bytes - size,
        "over_budget": size > max_bytes,
        "needs_compaction": size > aggressive_at * max_bytes,
        "iteration_count": count if isinstance(count, int) else 0,
        "last_run": state.get("last_run"),
        "paused": bool(state.get("paused", False)),
        "completed": bool(state.get("completed", False)),
    }


def merge_report(existing: dict[str, Any], programs: dict[str, dict[str, Any]], selected: str | None) -> dict[str, Any]:
    """``existing`` (the scheduler's JSON) with the size keys set from ``programs`` and a ``statefile`` object added.

    Every existing key is kept.  The selected program is ``selected`` if given, else ``existing["selected"]``.
    ``state_file_size_bytes`` is that program's size (0 when it has no file or nothing is selected, as upstream
    writes it); ``state_file_max_bytes`` its budget (else any program's budget, else what was there, else 30720).
    The inputs are not modified.
    """
    merged = dict(existing)
    chosen = selected if selected is not None else existing.get("selected")
    entry = programs.get(chosen) if isinstance(chosen, str) else None
    merged[SIZE_KEY] = int(entry["size"]) if entry is not None else 0
    merged[MAX_KEY] = _budget(entry, programs, existing)
    merged[STATEFILE_KEY] = {
        "programs": {name: dict(programs[name]) for name in sorted(programs)},
        "generated_by": f"statefile {__version__}",
    }
    return merged


def _budget(entry: dict[str, Any] | None, programs: dict[str, dict[str, Any]], existing: dict[str, Any]) -> int:
    if entry is not None:
        return int(entry["max"])
    other = next(iter(programs.values()), None)
    if other is not None:
        # Every program shares the configured budget; any one of them says what it is.
        return int(other["max"])
    previous = existing.get(MAX_KEY)
    return previous if isinstance(previous, int) and not isinstance(previous, bool) else DEFAULT_MAX_BYTES


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON ending in a newline, atomically (see :func:`write_text_atomic`)."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8, atomically: a reader sees the old file or the new one.

    Parent folders are created; an existing file's permissions are kept.  A device or FIFO (``--out
    /dev/stdout``) is written into, never replaced (:func:`statefile.store.atomic.write_output`).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise output_error(exc, path) from None
    write_output(path, text.encode("utf-8"))


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when the file does not exist.  Anything else is a UsageError."""
    try:
        data = read_regular_file(path, limit=INPUT_LIMIT)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror}); check the path") from None
    try:
        value = parse_json(data.decode("utf-8"), nan_as_null=True)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON (not UTF-8 at byte {exc.start}); fix or delete it") from None
    except JsonError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc}); fix or delete it") from None
    if not isinstance(value, dict):
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
        raise UsageError(f"{path} holds a JSON {kind}, not an object; fix or delete it")
    return value
