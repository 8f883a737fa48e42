"""Where state files live: a git branch (:class:`GitStore`) or a plain folder (:class:`FolderStore`).

Both stores have one interface (:class:`Store`, in :mod:`statefile.store.base`).  The central operation is
:meth:`Store.update`::

    store.update("perf", fn, "statefile: record iteration 57 of perf (✅)")

``fn`` receives the current document (or ``None`` for a new program) and returns the new one, or a
:class:`Change` that also carries text to archive.  The result is written atomically: one commit made with
compare-and-swap on a git branch, or one locked write in a folder.  When another writer got in first, the store
reads the new state and **calls ``fn`` again** on it, so ``fn`` must be a pure function of its input: it must not
count calls, append to outside lists or perform side effects it cannot repeat.
"""

from __future__ import annotations

from statefile.store.base import BOT_EMAIL as BOT_EMAIL
from statefile.store.base import BOT_NAME as BOT_NAME
from statefile.store.base import DEFAULT_BRANCH as DEFAULT_BRANCH
from statefile.store.base import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from statefile.store.base import Change as Change
from statefile.store.base import LogEntry as LogEntry
from statefile.store.base import Store as Store
from statefile.store.base import UpdateFn as UpdateFn
from statefile.store.base import UpdateResult as UpdateResult
from statefile.store.folder import FolderStore as FolderStore
from statefile.store.git import GitStore as GitStore
from statefile.store.git import Repository as Repository
from statefile.store.git import discover as discover
from statefile.store.git import find_repository as find_repository

__all__ = [
    "BOT_EMAIL",
    "BOT_NAME",
    "DEFAULT_BRANCH",
    "DEFAULT_MAX_BYTES",
    "Change",
    "FolderStore",
    "GitStore",
    "LogEntry",
    "Repository",
    "Store",
    "UpdateFn",
    "UpdateResult",
    "discover",
    "find_repository",
]
