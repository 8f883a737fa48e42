"""statefile: keep the markdown memory of long-running Autoloop agent programs in git, correct and small.

The public API is imported lazily so ``statefile --version`` does not pay for markdown-it, GitPython and click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover - names for type checkers; runtime goes through __getattr__
    from statefile.document import Anomaly, Section, StateDocument, parse  # noqa: F401
    from statefile.errors import BudgetError, ConflictError, StatefileError  # noqa: F401
    from statefile.history import Iteration, IterationRange, OpaqueEntry  # noqa: F401
    from statefile.template import new_state_file  # noqa: F401

_EXPORTS = {
    "parse": "statefile.document",
    "StateDocument": "statefile.document",
    "Section": "statefile.document",
    "Anomaly": "statefile.document",
    "Iteration": "statefile.history",
    "IterationRange": "statefile.history",
    "OpaqueEntry": "statefile.history",
    "new_state_file": "statefile.template",
    "StatefileError": "statefile.errors",
    "BudgetError": "statefile.errors",
    "ConflictError": "statefile.errors",
    "CompactionPolicy": "statefile.compaction",
    "CompactionResult": "statefile.compaction",
    "compact": "statefile.compaction",
    "Store": "statefile.store",
    "GitStore": "statefile.store",
    "FolderStore": "statefile.store",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'statefile' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
