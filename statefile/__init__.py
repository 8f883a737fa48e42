"""statefile: keep the markdown memory of long-running Autoloop agent programs in git, correct and small.

The public API is every name in ``__all__``, fully typed (``py.typed``); docs/python-api.md shows it at work."""

from __future__ import annotations

import os
import signal
import types

__version__ = "0.1.0"  # before the imports: modules below read it while this package is still loading


def _interrupted_while_loading(signum: int, frame: types.FrameType | None) -> None:
    """Ctrl-C while statefile loads, before any command ran: one line and the interrupt's exit code, no traceback."""
    try:
        os.write(2, b"statefile: interrupted while starting; nothing was read or written\n")
    finally:
        os._exit(130)


try:  # only while the modules below load: the previous handler comes back at the end
    _BEFORE_LOADING = signal.signal(signal.SIGINT, _interrupted_while_loading)
except ValueError:  # not the main thread, which alone may set handlers (and alone receives the signal)
    _BEFORE_LOADING = None

from statefile.errors import (  # noqa: E402 - after the handler, which must cover these imports
    BudgetError,
    ConflictError,
    GitError,
    InvalidDataError,
    NotFoundError,
    StatefileError,
    UsageError,
)
from statefile.model.document import Anomaly, Section, StateDocument, parse  # noqa: E402
from statefile.model.history import Entry, Iteration, IterationRange, OpaqueEntry  # noqa: E402
from statefile.model.template import new_state_file  # noqa: E402
from statefile.policy.compaction import CompactionPolicy, CompactionReport, CompactionResult, compact  # noqa: E402
from statefile.policy.rules import RecordRequest, record  # noqa: E402
from statefile.store import Change, FolderStore, GitStore, Store, UpdateResult  # noqa: E402

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

if _BEFORE_LOADING is not None:
    signal.signal(signal.SIGINT, _BEFORE_LOADING)
