"""What a command runs with: the configuration and the store, resolved lazily (``--help`` never touches git)."""

from __future__ import annotations

import contextlib
import difflib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from statefile.app.config import Config, resolve_config
from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.errors import InterruptedWrite, NotFoundError, StatefileError, UsageError
from statefile.integrations.ghaw import RepoMemoryFolder
from statefile.numbers import plural
from statefile.store import FolderStore, GitStore, Repository, Store, find_repository
from statefile.store.git.branches import decide


@dataclass
class AppContext:
    """Global options as given (``None`` = not given) and the objects resolved from them."""

    repo: Path | None = None
    branch: str | None = None
    remote: str | None = None
    folder: Path | None = None
    max_bytes: int | None = None
    as_json: bool = False
    quiet: bool = False
    #: Work on gh-aw's repo-memory folder (from the workflow frontmatter, or ``--dir``) under its push limits.
    repo_memory: bool = False
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    #: Where notes for people go (where a read came from, …); the CLI prints them on stderr unless --quiet.
    notify: Callable[[str], None] = lambda message: None
    _config: Config | None = None
    _store: Store | None = None
    _read_store: Store | None = None
    _memory_folder: RepoMemoryFolder | None = None
    _repository: Repository | None = None
    _discovered: bool = False
    _read_checked: bool = False
    #: Every store this run opened, shared with derived contexts: an interrupt speaks for all of them.
    _opened: list[Store] = field(default_factory=list)
    #: ``--no-fetch``: reads of a remote-tracking copy do not fetch it first (:attr:`stale` says how old it is).
    no_fetch: bool = False
    #: Reads that may be out of date, in words, for the main output; shared with derived contexts.
    stale: list[str] = field(default_factory=list)
    #: Whether ``--dir`` names gh-aw's repo-memory folder (``None``: not looked at yet; see __post_init__).
    _dir_is_memory: bool | None = None

    def __post_init__(self) -> None:
        # gh-aw's file-glob would drop a plain folder's archive parts: a --dir naming its folder works as --repo-memory.
        if self.folder is not None and not self.repo_memory and self._dir_is_memory is None:
            configured = self.config().repo_memory_dir.value
            self._dir_is_memory = os.path.realpath(self.folder) == os.path.realpath(configured)
            self.repo_memory = self._dir_is_memory

    def repository(self) -> Repository | None:
        """The git repository at or above ``--repo`` (else the cwd), as git finds it; ``None`` when there is none."""
        if not self._discovered:
            start = self.repo if self.repo is not None else Path.cwd()
            self._repository = find_repository(start) if start.is_dir() else None
            self._discovered = True
        return self._repository

    @property
    def root(self) -> Path | None:
        """The top of the repository the configuration is read from (``None`` outside any repository)."""
        try:
            repository = self.repository()
        except StatefileError:
            return None  # a repository git refuses has no configuration to read; store() reports why
        return repository.top if repository is not None else None

    def config(self) -> Config:
        """Settings resolved from flags > environment > TOML > workflow frontmatter > defaults."""
        if self._config is None:
            flags = {"max_bytes": self.max_bytes, "branch": self.branch, "remote": self.remote}  # None: not given
            self._config = resolve_config(self.root, flags, self.env)
        return self._config

    def store(self) -> Store:
        """The store commands read and write: a folder with ``--dir``, else the memory branch of the repo."""
        if self._store is None:
            store = self._open_store()
            self._opened.append(store)
            if isinstance(store, GitStore) and store.remote is not None:
                store.fetch()  # reads come from local refs: one fetch makes every command see the remote's state
            self._store = store
        return self._store

    def _open_store(self) -> Store:
        config = self.config()
        max_bytes = config.max_bytes.value
        if self.repo_memory or self.folder is not None:
            memory = self.memory_folder() if self.repo_memory else None
            flag = "--repo-memory" if self.repo_memory and not self._dir_is_memory else "--dir"
            what = f"--dir {self.folder} (gh-aw's repo-memory folder)" if self._dir_is_memory else flag
            kind = "gh-aw's memory folder" if memory is not None else "a plain folder"
            for key in ("remote",) if memory is not None else ("branch", "remote"):
                if getattr(config, key).value and config.explicit(key):
                    drop = f"drop --{key}/STATEFILE_{key.upper()} or {flag}"
                    raise UsageError(f"{what} works on {kind}, which cannot use a {key} ({config.origin(key)}); {drop}")
            if memory is not None:
                return FolderStore(memory.folder, max_bytes=max_bytes, archive_layout=memory.layout_for)
            if self.folder is None or not self.folder.is_dir():
                raise NotFoundError(f"--dir {self.folder}: no such folder; create it or check the path")
            return FolderStore(self.folder, max_bytes=max_bytes)
        if self.repo is not None and not self.repo.exists():
            raise NotFoundError(f"--repo {self.repo}: no such folder; pass the path of a git repository")
        if (repository := self.repository()) is None:
            fix = "run inside a clone, pass --repo PATH, or use --dir PATH"
            raise NotFoundError(f"no git repository at or above {self.repo or Path.cwd()}; {fix}")
        name, email = config.author_name.value, config.author_email.value
        author = f"{name or BOT_NAME} <{email or BOT_EMAIL}>" if name or email else None
        return GitStore(repository, config.branch.value, config.remote.value, max_bytes=max_bytes, author=author)

    def close(self) -> None:
        """Close every store this run opened now, not at exit (a Ctrl-C in a reader's wait printed a traceback)."""
        for store in self._opened:
            with contextlib.suppress(StatefileError, OSError):
                store.close()

    def interrupted(self) -> InterruptedWrite | None:
        """The error a Ctrl-C must end with when a write of this run may have landed (``None``: "aborted" is true)."""
        said = [text for store in self._opened if (text := store.interrupted_write())]
        return InterruptedWrite("; ".join(said)) if said else None

    def memory_folder(self) -> RepoMemoryFolder:
        """gh-aw's repo-memory folder (``--dir``, else the workflow's ``repo-memory-dir``) and its push limits."""
        if self._memory_folder is None:
            config = self.config()
            folder = self.folder or Path(config.repo_memory_dir.value)
            if not folder.is_dir():
                where = f"repo-memory's folder ({config.origin('repo_memory_dir')})" if not self.folder else "--dir"
                fix = "gh-aw creates it when the workflow has tools.repo-memory — pass --dir PATH elsewhere"
                raise NotFoundError(f"{where} {folder}: no such folder; {fix}")
            self._memory_folder = RepoMemoryFolder(
                folder,
                globs=tuple(config.file_glob.value),
                max_file_size=config.max_bytes.value,
                max_patch_size=config.max_patch_size.value,
                max_file_count=config.max_file_count.value,
            )
        return self._memory_folder

    def reader(self, *, require_branch: bool = True) -> Store:
        """The store for reads, noting one not at the remote's tip; ``require_branch=False``: no branch reads empty."""
        store = self.store()
        if not isinstance(store, GitStore) or self._read_checked:
            return self._read_store or store
        state = store.branch_state()
        self._read_checked = True
        if not state.exists:
            if require_branch:
                self._missing_branch(store, "read")
            return store
        if store.remote is None and state.tracking is not None:
            # Fetch the branch (a stale copy once showed running programs as paused), else say how old the copy is.
            remote, reason, fresh = state.tracking_name.partition("/")[0], "--no-fetch", None
            try:
                if not self.no_fetch:
                    fresh = GitStore(store.repository, branch=store.branch, remote=remote, max_bytes=store.max_bytes)
                    fresh.fetch(read_only=True)
            except StatefileError as exc:
                if fresh is not None:
                    fresh.close()
                fresh, reason = None, f"fetching {remote} failed: {str(exc).split(';')[0]}"
            if fresh is not None:  # for reads only: writes keep the store the options asked for (no unasked push)
                self._opened.append(fresh)
                store = self._read_store = fresh
                state = fresh.branch_state()
            else:
                read = state.local or state.tracking
                what = f"the local branch {store.branch}" if state.local else f"{state.tracking_name} as last fetched"
                seconds = 0 if read is None else max(0, int(time.time()) - store.commit_time(read))
                units = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
                unit, size = next((unit, size) for unit, size in units if seconds >= size or size == 1)
                age = "" if read is None else f", whose newest commit is {plural(seconds // size, unit)} old"
                advice = "drop --no-fetch" if self.no_fetch else f"check that {remote} is reachable"
                self.stale.append(f"read {what}{age} ({reason}) — it may be out of date; {advice}")
                self.notify(self.stale[-1])
        verdict = decide(state)
        if verdict.pin is not None:
            store.pin(verdict.pin)  # --remote asks for the remote's memory; the local fork is reported in the note
        if verdict.note:
            self.notify(verdict.note)
        return store

    def writer(self, *, create: bool = False) -> Store:
        """The store for writes, refusing to fork the memory or to invent a branch (unless ``create``: no near miss)."""
        store = self.store()
        if not isinstance(store, GitStore):
            if self._dir_is_memory:
                self.notify(f"--dir {self.folder} is gh-aw's repo-memory folder: writing within its push limits")
            return store
        state = store.branch_state()
        if state.exists and (refusal := decide(state, create=create).refusal) is not None:
            raise refusal
        if not state.exists and (not create or self.env.get(NEW_BRANCH_ENV, "").strip() != store.branch):
            self._missing_branch(store, "create" if create else "write")
        return store

    def _missing_branch(self, store: GitStore, action: str) -> None:
        """Raise why there is no branch to ``action`` (``create``: only when it is a near miss of one)."""
        branch = store.branch
        close = near_misses(branch, store.branch_names())
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        if action == "create" and close:  # a typo's new branch would fork the memory
            fix = f"pass --branch {close[0]}, or if {branch} is a new memory, run again with {NEW_BRANCH_ENV}={branch}"
            raise NotFoundError(f"no memory branch {branch}{hint}; nothing was written — {fix}")
        if action == "create":
            return
        where = f"here or on {store.remote}" if store.remote is not None else "in this repository"
        what = "nothing was written — " if action == "write" else ""
        if close:
            # A typo: following advice to create it would fork the memory.  Only the name it missed is offered.
            raise NotFoundError(f"no memory branch {branch} {where}{hint}; {what}pass --branch {close[0]}")
        remotes = store.remote_names() if store.remote is None else []
        name = "origin" if "origin" in remotes else remotes[0] if remotes else ""
        steps = [f"pass --remote {name} if it is on a remote"] if remotes else []
        start = "pass --create (or run 'statefile init PROGRAM') to start a new memory branch"
        steps.append(start if action == "write" else "'statefile init PROGRAM' starts one")
        raise NotFoundError(f"no memory branch {branch} {where}{hint}; {what}{'; '.join(steps)}")

    @property
    def globs(self) -> tuple[str, ...]:
        """Which ``{name}.md`` files are state files (the configured file-glob)."""
        return tuple(self.config().file_glob.value)

    def _derived(self, **changes: Any) -> AppContext:
        """The same options with ``changes``, opening its own stores (the list of opened stores is shared)."""
        return replace(self, _store=None, _read_store=None, _read_checked=False, **changes)

    def with_max_bytes(self, max_bytes: int | None) -> AppContext:
        """The same options with a command-level ``--max-bytes`` (``None``: unchanged)."""
        return self if max_bytes is None else self._derived(max_bytes=max_bytes, _config=None)

    def with_summarizer(self, command: str | None) -> AppContext:
        """The same options with a command-level ``--summarizer`` (``None``: unchanged)."""
        env = {**self.env, "STATEFILE_SUMMARIZER": command} if command is not None else None
        return self if env is None else self._derived(env=env, _config=None)

    def with_folder(self, folder: Path) -> AppContext:
        """The same options, working on the plain folder ``folder`` (used for file-path arguments)."""
        return self._derived(folder=folder, repo_memory=False, _memory_folder=None, _dir_is_memory=None)

    def with_repository(self, repo: Path) -> AppContext:
        """The same options, with the repository at ``repo`` (a scratch one for a job without a checkout)."""
        return self._derived(repo=repo, _repository=None, _discovered=False)


#: The acknowledgement that a new memory branch is meant to be named this close to an existing one: its name.
NEW_BRANCH_ENV = "STATEFILE_NEW_BRANCH"


def near_misses(name: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that ``name`` may be a typo of: one edit apart, or a ratio ≥ 0.9 (not 0.6: shared prefixes)."""
    found = []
    for other in names:
        if other == name or other.startswith(name + "/") or name.startswith(other + "/"):
            # One inside the other is no typo: git cannot hold both (its file/folder rule), and says so itself.
            continue
        a, b = name.casefold(), other.casefold()
        close = difflib.SequenceMatcher(None, a, b).ratio() >= 0.9
        for _ in range(2):  # one insertion, deletion, substitution or swap: strip the common prefix, then suffix
            start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            a, b = a[start:][::-1], b[start:][::-1]
        if close or (len(a) <= 1 and len(b) <= 1) or (len(a) == 2 and a == b[::-1]):
            found.append(other)
    return found[:3]
