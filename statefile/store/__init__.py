"""Where state files live: a git branch (:class:`GitStore`) or a plain folder (:class:`FolderStore`), behind one
interface (:class:`Store`) whose ``update("perf", fn, message)`` writes ``fn``'s result atomically (``fn`` must be pure:
it runs again when another writer got in first)."""

from __future__ import annotations

from statefile.store.base import Change, Store, UpdateResult
from statefile.store.folder import FolderStore
from statefile.store.git.runner import Repository, discover, find_repository
from statefile.store.git.store import GitStore

__all__ = ["Change", "FolderStore", "GitStore", "Repository", "Store", "UpdateResult", "discover", "find_repository"]
