"""statefile: keep the markdown memory of long-running Autoloop agent programs in git, correct and small.

The public API::

    import statefile

    doc = statefile.parse(text)                       # any text; doc.render() == text
    doc = doc.with_field("Paused", True)               # documents are values: editors return new ones
    result = statefile.compact(doc, statefile.CompactionPolicy(max_bytes=30720))
    with statefile.Store.open(".", branch="memory/autoloop") as store:
        store.update("perf", lambda doc: ..., "message")

Every name in ``__all__`` is importable from here and fully typed (``py.typed``).  The names are loaded on first
use, so ``statefile --version`` does not pay for the modules behind them (about 80 ms of imports measured here).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ below loads the same names on first use
    from statefile.errors import BudgetError as BudgetError
    from statefile.errors import ConflictError as ConflictError
    from statefile.errors import GitError as GitError
    from statefile.errors import InvalidDataError as InvalidDataError
    from statefile.errors import NotFoundError as NotFoundError
    from statefile.errors import StatefileError as StatefileError
    from statefile.errors import UsageError as UsageError
    from statefile.model.anomalies import Anomaly as Anomaly
    from statefile.model.document import StateDocument as StateDocument
    from statefile.model.document import parse as parse
    from statefile.model.history import Entry as Entry
    from statefile.model.history import Iteration as Iteration
    from statefile.model.history import IterationRange as IterationRange
    from statefile.model.history import OpaqueEntry as OpaqueEntry
    from statefile.model.sections import Section as Section
    from statefile.model.template import new_state_file as new_state_file
    from statefile.policy.compaction import CompactionPolicy as CompactionPolicy
    from statefile.policy.compaction import CompactionReport as CompactionReport
    from statefile.policy.compaction import CompactionResult as CompactionResult
    from statefile.policy.compaction import compact as compact
    from statefile.policy.rules import RecordRequest as RecordRequest
    from statefile.policy.rules import record as record
    from statefile.store import Change as Change
    from statefile.store import FolderStore as FolderStore
    from statefile.store import GitStore as GitStore
    from statefile.store import Store as Store
    from statefile.store import UpdateResult as UpdateResult

# Where each public name lives; tests check this agrees with the block above and with __all__.
_EXPORTS: dict[str, str] = {
    "BudgetError": "statefile.errors",
    "ConflictError": "statefile.errors",
    "GitError": "statefile.errors",
    "InvalidDataError": "statefile.errors",
    "NotFoundError": "statefile.errors",
    "StatefileError": "statefile.errors",
    "UsageError": "statefile.errors",
    "Anomaly": "statefile.model.anomalies",
    "StateDocument": "statefile.model.document",
    "parse": "statefile.model.document",
    "Entry": "statefile.model.history",
    "Iteration": "statefile.model.history",
    "IterationRange": "statefile.model.history",
    "OpaqueEntry": "statefile.model.history",
    "Section": "statefile.model.sections",
    "new_state_file": "statefile.model.template",
    "CompactionPolicy": "statefile.policy.compaction",
    "CompactionReport": "statefile.policy.compaction",
    "CompactionResult": "statefile.policy.compaction",
    "compact": "statefile.policy.compaction",
    "RecordRequest": "statefile.policy.rules",
    "record": "statefile.policy.rules",
    "Change": "statefile.store",
    "FolderStore": "statefile.store",
    "GitStore": "statefile.store",
    "Store": "statefile.store",
    "UpdateResult": "statefile.store",
}

__all__ = [
    "Anomaly",
    "BudgetError",
    "Change",
    "CompactionPolicy",
    "CompactionReport",
    "CompactionResult",
    "ConflictError",
    "Entry",
    "FolderStore",
    "GitError",
    "GitStore",
    "InvalidDataError",
    "Iteration",
    "IterationRange",
    "NotFoundError",
    "OpaqueEntry",
    "RecordRequest",
    "Section",
    "StateDocument",
    "StatefileError",
    "Store",
    "UpdateResult",
    "UsageError",
    "__version__",
    "compact",
    "new_state_file",
    "parse",
    "record",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there, not Any

    def __getattr__(name: str) -> object:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'statefile' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(__all__)
