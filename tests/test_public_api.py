"""The public API: every exported name resolves, agrees with what type checkers see, and leaks no ``Any``."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import statefile

ROOT = Path(__file__).resolve().parents[1]


def test_every_exported_name_resolves() -> None:
    """One list (``__all__``): each name is there, and nothing else public is re-exported."""
    assert all(hasattr(statefile, name) for name in statefile.__all__)
    tree = ast.parse((ROOT / "statefile" / "__init__.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported - {"annotations"} == set(statefile.__all__) - {"__version__"}


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        statefile.nope  # type: ignore[attr-defined]  # noqa: B018


def test_documents_are_values() -> None:
    doc = statefile.parse(statefile.new_state_file("perf"))
    edited = doc.with_field("Paused", True)
    assert edited is not doc and doc.machine_state["paused"] is False and edited.machine_state["paused"] is True
    with pytest.raises(AttributeError, match="immutable"):
        doc._text = "x"  # type: ignore[misc]
    assert {doc, statefile.parse(doc.render())} == {doc}


USER_CODE = """
    from __future__ import annotations

    from datetime import datetime, timezone

    import statefile
    from statefile import (
        BudgetError, Change, CompactionPolicy, CompactionResult, FolderStore, Iteration, RecordRequest,
        StateDocument, Store, UpdateResult, compact, new_state_file, parse, record,
    )

    doc: StateDocument = parse(new_state_file("perf", metric_direction="lower"))
    doc = doc.with_fields({"Paused": False}).with_lesson("Warm the cache first")
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    newer = record(doc, RecordRequest(status="accepted", metric=0.9, change="Cache rows"), program="perf", now=when)
    result: CompactionResult = compact(newer, CompactionPolicy(max_bytes=30720))
    numbers: list[int] = [n for entry in result.document.iterations for n in entry.covers]
    first: Iteration | None = result.document.iterations[0] if result.document.iterations else None
    size: int = statefile.parse("x").size
    store: Store = FolderStore(".")
    change = Change(document=doc)
    counted: Change[int] = Change(document=doc, detail=3)
    landed: UpdateResult[int] = store.update("perf", lambda old: counted, "statefile: count")
    count: int | None = landed.detail
    tip: str | None = landed.commit
    try:
        compact(doc, CompactionPolicy(max_bytes=10))
    except BudgetError as exc:
        message: str = str(exc)
"""


@pytest.mark.slow  # mypy over user code
@pytest.mark.skipif(shutil.which("mypy") is None and importlib.util.find_spec("mypy") is None, reason="needs mypy")
def test_user_code_type_checks_strictly_with_no_any(tmp_path: Path) -> None:
    """mypy --strict on code using the API: no unexported names, and no expression of type Any."""
    snippet = tmp_path / "user_code.py"
    snippet.write_text(textwrap.dedent(USER_CODE), encoding="utf-8")
    config = tmp_path / "mypy.ini"
    # --disallow-any-expr for the user's module only: the package's own internals may use Any where it is honest
    # (parsed JSON, for one); what must not happen is Any reaching the caller through a public name.
    config.write_text(
        "[mypy]\nstrict = True\nincremental = False\n"
        "[mypy-user_code]\ndisallow_any_expr = True\n"
        "[mypy-statefile.*]\nfollow_imports = silent\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
