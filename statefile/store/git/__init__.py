"""The git store, spoken to through the ``git`` binary's plumbing: git already holds every rule statefile must not
get wrong (both object formats, every ref backend, linked work trees, ``safe.directory``, valid ref names), and
a git library would cost 70-80 ms of import on every write.  Nothing here parses or writes git's on-disk formats
but the entries of a tree read from ``cat-file``.  Modules: ``runner`` (the one place git starts), ``repo``,
``objects``, ``refs``, ``remote``, ``retry``, ``branches`` (the pure branch table), ``transaction``, ``store``.
"""

from __future__ import annotations

from statefile.store.git.repo import Repository, discover, find_repository
from statefile.store.git.store import GitStore

__all__ = ["GitStore", "Repository", "discover", "find_repository"]
