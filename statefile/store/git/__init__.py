"""The git store: state files on a branch, spoken to through the ``git`` binary's plumbing commands.

Why plumbing, and no git library: the ``git`` program is the well-kept library here.  It already holds every rule
statefile must not get wrong — both object formats (SHA-1 and SHA-256), every ref backend (files, packed,
reftable), ``GIT_DIR`` and linked work trees, ``safe.directory``, what a valid ref name is — and its plumbing
(``hash-object``, ``mktree``, ``commit-tree``, ``update-ref``, ``for-each-ref``, ``cat-file --batch``) is a
stable interface made for programs.  GitPython was declared but never imported: its import alone costs 70–80 ms
on every write (more than a whole local record's git work), and it cannot write SHA-256 repositories; gitdb,
which we used to write objects, hand-encoded trees and commits with SHA-1 assumed.  So nothing here parses or
writes git's on-disk formats; every byte git stores is written by git.

The modules, by concern:

- :mod:`.runner` — the one place a git process starts: environment, time limits, one-line redacted errors.
- :mod:`.repo` — finding the repository, once (``git rev-parse``); the CLI's configuration uses the same answer.
- :mod:`.objects` — reading objects (one long-lived ``cat-file --batch``, ``ls-tree``) and writing them.
- :mod:`.refs` — reading refs (``for-each-ref``) and moving them by compare-and-swap (``update-ref``).
- :mod:`.remote` — fetch and push, remote names and URLs, credentials passed through the environment.
- :mod:`.retry` — the one retry loop (jittered exponential backoff) and the outcome of an attempt.
- :mod:`.store` — :class:`GitStore`, the :class:`~statefile.store.base.Store` built from the above.
"""

from __future__ import annotations

from statefile.store.git.repo import Repository as Repository
from statefile.store.git.repo import discover as discover
from statefile.store.git.repo import find_repository as find_repository
from statefile.store.git.store import GitStore as GitStore

__all__ = ["GitStore", "Repository", "discover", "find_repository"]
