"""Where state files live: a git branch (:class:`GitStore`) or a plain folder (:class:`FolderStore`), behind one
interface (:class:`Store`).  The central operation, ``store.update("perf", fn, message)``, writes ``fn``'s result
atomically; when another writer got in first it calls ``fn`` again on the new state, so ``fn`` must be a pure
function of its input.
"""

from __future__ import annotations

from statefile.defaults import BOT_EMAIL, BOT_NAME, DEFAULT_BRANCH, DEFAULT_MAX_BYTES
from statefile.store.base import Change, LogEntry, Store, UpdateFn, UpdateResult
from statefile.store.folder import FolderStore
from statefile.store.git import GitStore, Repository, discover, find_repository

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
