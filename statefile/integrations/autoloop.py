"""What the upstream scheduler's ``autoloop.json`` should say about state-file sizes, and writing it safely:
``statefile report`` keeps every key, corrects ``state_file_size_bytes`` and ``state_file_max_bytes`` (a constant
30720 upstream) from the branch and the budget, and adds a ``statefile`` object with every program."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from statefile import __version__
from statefile.defaults import AGGRESSIVE_AT, DEFAULT_MAX_BYTES
from statefile.errors import UsageError
from statefile.jsontext import JsonError, parse_json
from statefile.store.atomic import INPUT_LIMIT, os_error, read_regular_file, write_output


def program_report(
    name: str, size: int, max_bytes: int, state: Mapping[str, Any], *, aggressive_at: float = AGGRESSIVE_AT
) -> dict[str, Any]:
    """One program's entry: its size against the budget and the scheduler's view of its Machine State."""
    return {
        "file": f"{name}.md",
        "size": size,
        "max": max_bytes,
        "headroom": max_bytes - size,
        "over_budget": size > max_bytes,
        "needs_compaction": size > aggressive_at * max_bytes,
        "iteration_count": count if isinstance(count := state.get("iteration_count"), int) else 0,
        "last_run": state.get("last_run"),
        "paused": bool(state.get("paused", False)),
        "completed": bool(state.get("completed", False)),
    }


def merge_report(existing: dict[str, Any], programs: dict[str, dict[str, Any]], selected: str | None) -> dict[str, Any]:
    """A copy of ``existing`` (the scheduler's JSON) with the selected program's size and budget (0 and any
    program's, as upstream writes them, without one) and our own ``statefile`` key (never one of theirs) added."""
    chosen = selected if selected is not None else existing.get("selected")
    entry = programs.get(chosen) if isinstance(chosen, str) else None
    # Every program shares the configured budget; any one of them says what it is.
    budget = entry or next(iter(programs.values()), None)
    previous = existing.get("state_file_max_bytes")
    fallback = previous if isinstance(previous, int) and not isinstance(previous, bool) else DEFAULT_MAX_BYTES
    return {
        **existing,
        "state_file_size_bytes": int(entry["size"]) if entry is not None else 0,
        "state_file_max_bytes": int(budget["max"]) if budget is not None else fallback,
        "statefile": {
            "programs": {name: dict(programs[name]) for name in sorted(programs)},
            "generated_by": f"statefile {__version__}",
        },
    }


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8, atomically, creating parent folders (a device or FIFO is written into)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, f"write {path}") from None
    write_output(path, text.encode("utf-8"))


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when the file does not exist.  Anything else is a UsageError."""
    try:
        value = parse_json(read_regular_file(path, limit=INPUT_LIMIT).decode("utf-8"), nan_as_null=True)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read {path} ({exc.strerror}); check the path") from None
    except (UnicodeDecodeError, JsonError) as exc:
        why = f"not UTF-8 at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else exc
        raise UsageError(f"{path} is not valid JSON ({why}); fix or delete it") from None
    if not isinstance(value, dict):
        kinds = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
        kind = kinds.get(type(value), type(value).__name__)
        raise UsageError(f"{path} holds a JSON {kind}, not an object; fix or delete it")
    return value
