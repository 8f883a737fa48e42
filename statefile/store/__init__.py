"""Where state files live: a git branch (:class:`GitStore`) or a plain folder (:class:`FolderStore`), behind one
interface (:class:`Store`).  The central operation, ``store.update("perf", fn, message)``, writes ``fn``'s result
atomically; when another writer got in first it calls ``fn`` again on the new state, so ``fn`` must be a pure
function of its input.
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
