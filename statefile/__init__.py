"""statefile: keep the markdown memory of long-running Autoloop agent programs in git, correct and small.

The public API is imported lazily so ``statefile --version`` does not pay for markdown-it, GitPython and click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover - names for type checkers; runtime goes through __getattr__
    from statefile.errors import BudgetError, ConflictError, StatefileError  # noqa: F401
    from statefile.model.document import Anomaly, Section, StateDocument, parse  # noqa: F401
    from statefile.model.history import Iteration, IterationRange, OpaqueEntry  # noqa: F401
    from statefile.model.template import new_state_file  # noqa: F401

_EXPORTS = {
    "parse": "statefile.model.document",
    "StateDocument": "statefile.model.document",
    "Section": "statefile.model.document",
    "Anomaly": "statefile.model.document",
    "Iteration": "statefile.model.history",
    "IterationRange": "statefile.model.history",
    "OpaqueEntry": "statefile.model.history",
    "new_state_file": "statefile.model.template",
    "StatefileError": "statefile.errors",
    "BudgetError": "statefile.errors",
    "ConflictError": "statefile.errors",
    "CompactionPolicy": "statefile.policy.compaction",
    "CompactionResult": "statefile.policy.compaction",
    "compact": "statefile.policy.compaction",
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
