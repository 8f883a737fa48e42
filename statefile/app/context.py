"""What a command runs with: resolved configuration and the store it reads and writes, resolved lazily (so
``statefile --help`` never touches git) from the global options; where reads come from and which writes are refused
is :mod:`statefile.store.git.branches`' table."""

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
from statefile.integrations.repo_memory import RepoMemoryFolder
from statefile.numbers import plural
from statefile.store import FolderStore, GitStore, Repository, Store, find_repository
from statefile.store.git.branches import BranchState, decide


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
        # gh-aw's file-glob would drop what a plain folder store writes (archive/{program}/0001.md under "*.md"):
        # a --dir naming repo-memory's folder works as --repo-memory, decided once since use cases read the field.
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
            given = {"max_bytes": self.max_bytes, "branch": self.branch, "remote": self.remote}
            flags: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
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
        if self.repo_memory:
            memory = self.memory_folder()
            if config.remote.value and config.explicit("remote"):
                flag = "--dir" if self._dir_is_memory else "--repo-memory"
                what = f"--dir {self.folder} (gh-aw's repo-memory folder)" if self._dir_is_memory else flag
                raise UsageError(
                    f"{what} works on gh-aw's memory folder and cannot use a remote ({config.origin('remote')}); "
                    f"drop --remote/STATEFILE_REMOTE or {flag}"
                )
            return FolderStore(memory.folder, max_bytes=max_bytes, archive_layout=memory.layout_for)
        if self.folder is not None:
            if config.explicit("branch"):
                raise UsageError(
                    f"--dir works on a plain folder, which has no branch, but a branch was given "
                    f"({config.origin('branch')}); drop --branch/STATEFILE_BRANCH or --dir"
                )
            if config.remote.value and config.explicit("remote"):
                raise UsageError(
                    f"--dir works on a plain folder and cannot use a remote ({config.origin('remote')}); "
                    "drop --remote/STATEFILE_REMOTE or --dir"
                )
            if not self.folder.is_dir():
                raise NotFoundError(f"--dir {self.folder}: no such folder; create it or check the path")
            return FolderStore(self.folder, max_bytes=max_bytes)
        if self.repo is not None and not self.repo.exists():
            raise NotFoundError(f"--repo {self.repo}: no such folder; pass the path of a git repository")
        repository = self.repository()
        if repository is None:
            where = self.repo or Path.cwd()
            raise NotFoundError(
                f"no git repository at or above {where}; run inside a clone, pass --repo PATH, or use --dir PATH"
            )
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
        """gh-aw's repo-memory folder and its push limits (``--repo-memory``): the folder is ``--dir`` if given,
        else ``/tmp/gh-aw/repo-memory/{id}`` from the workflow frontmatter (``default`` without an id)."""
        if self._memory_folder is None:
            config = self.config()
            folder = self.folder if self.folder is not None else Path(config.repo_memory_dir.value)
            if not folder.is_dir():
                where = (
                    "--dir" if self.folder is not None else f"repo-memory's folder ({config.origin('repo_memory_dir')})"
                )
                raise NotFoundError(
                    f"{where} {folder}: no such folder; gh-aw creates it when the workflow has tools.repo-memory — "
                    "pass --dir PATH elsewhere"
                )
            self._memory_folder = RepoMemoryFolder(
                folder,
                globs=tuple(config.file_glob.value),
                max_file_size=config.max_bytes.value,
                max_patch_size=config.max_patch_size.value,
                max_file_count=config.max_file_count.value,
            )
        return self._memory_folder

    # -- where reads come from, and writes that would fork the memory ----------------------------------------------

    def reader(self, *, require_branch: bool = True) -> Store:
        """The store for a command that only reads, after saying where it reads from when that is not the remote's
        current tip (through :attr:`notify`); ``require_branch=False`` (the scheduler's first run) lets a branch
        that exists nowhere read as empty instead of a NotFoundError naming the closest branches."""
        store = self.store()
        if not isinstance(store, GitStore) or self._read_checked:
            return self._read_store or store
        state = store.branch_state()
        self._read_checked = True
        if not state.exists:
            if require_branch:
                raise self._missing_branch(store, "read")
            return store
        if store.remote is None and state.tracking is not None:
            store, state = self._fresh_read(store, state)
        verdict = decide(state)
        if verdict.pin is not None:
            store.pin(verdict.pin)  # --remote asks for the remote's memory; the local fork is reported in the note
        if verdict.note:
            self.notify(verdict.note)
        return store

    def _fresh_read(self, store: GitStore, state: BranchState) -> tuple[GitStore, BranchState]:
        """Fetch the branch (a stale copy once showed running programs as paused), else say how old the copy is."""
        remote = state.tracking_name.partition("/")[0]
        reason = "--no-fetch"
        if not self.no_fetch:
            fresh: GitStore | None = None
            try:
                fresh = GitStore(store.repository, branch=store.branch, remote=remote, max_bytes=store.max_bytes)
                fresh.fetch(read_only=True)
            except StatefileError as exc:
                if fresh is not None:
                    fresh.close()
                reason = f"fetching {remote} failed: {str(exc).split(';')[0]}"
            else:
                # For reads only: writes keep the store the options asked for (no push nobody asked for).
                self._opened.append(fresh)
                self._read_store = fresh
                return fresh, fresh.branch_state()
        # What the store reads without a remote: the local branch if there is one, else the remote-tracking copy.
        read = state.local or state.tracking
        what = f"the local branch {store.branch}" if state.local else f"{state.tracking_name} as last fetched"
        seconds = 0 if read is None else max(0, int(time.time()) - store.commit_time(read))
        age = "" if read is None else f", whose newest commit is {_age(seconds)} old"
        advice = "drop --no-fetch" if self.no_fetch else f"check that {remote} is reachable"
        self.stale.append(f"read {what}{age} ({reason}) — it may be out of date; {advice}")
        self.notify(self.stale[-1])
        return store, state

    def writer(self, *, create: bool = False) -> Store:
        """The store for a command that writes, refusing a write that would fork (the branch table) or invent the
        memory (a branch that exists nowhere, unless ``create``)."""
        store = self.store()
        if not isinstance(store, GitStore):
            if self._dir_is_memory:
                self.notify(
                    f"--dir {self.folder} is gh-aw's repo-memory folder: writing as --repo-memory does (archive parts "
                    "where its file-glob lets them reach the branch, within max-patch-size)"
                )
            return store
        state = store.branch_state()
        if not state.exists:
            if not create:
                raise self._missing_branch(store, "write")
            self._refuse_near_miss(store)
            return store
        if (refusal := decide(state, create=create).refusal) is not None:
            raise refusal
        return store

    def _missing_branch(self, store: GitStore, action: str) -> NotFoundError:
        branch = store.branch
        where = f"here or on {store.remote}" if store.remote is not None else "in this repository"
        close = near_misses(branch, store.branch_names())
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        what = "nothing was written — " if action == "write" else ""
        if close:
            # A typo: following advice to create it would fork the memory.  Only the name it missed is offered.
            return NotFoundError(f"no memory branch {branch} {where}{hint}; {what}pass --branch {close[0]}")
        remotes = store.remote_names() if store.remote is None else []
        name = "origin" if "origin" in remotes else remotes[0] if remotes else ""
        steps = [f"pass --remote {name} if it is on a remote"] if remotes else []
        if action == "write":
            steps.append("pass --create (or run 'statefile init PROGRAM') to start a new memory branch")
        else:
            steps.append("'statefile init PROGRAM' starts one")
        return NotFoundError(f"no memory branch {branch} {where}{hint}; {what}{'; '.join(steps)}")

    def _refuse_near_miss(self, store: GitStore) -> None:
        """A near miss is created only when STATEFILE_NEW_BRANCH repeats it (a retyped command line cannot)."""
        branch = store.branch
        close = near_misses(branch, store.branch_names())
        if not close or self.env.get(NEW_BRANCH_ENV, "").strip() == branch:
            return
        raise NotFoundError(
            f"no memory branch {branch} (did you mean {' or '.join(close)}?); nothing was written — a new branch "
            f"this close to an existing one is not created: pass --branch {close[0]}, or, if {branch} is really "
            f"meant to be a new memory, run the command again with {NEW_BRANCH_ENV}={branch}"
        )

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
        return (
            self if command is None else self._derived(env={**self.env, "STATEFILE_SUMMARIZER": command}, _config=None)
        )

    def with_folder(self, folder: Path) -> AppContext:
        """The same options, working on the plain folder ``folder`` (used for file-path arguments)."""
        return self._derived(folder=folder, repo_memory=False, _memory_folder=None, _dir_is_memory=None)

    def with_repository(self, repo: Path) -> AppContext:
        """The same options, with the repository at ``repo`` (a scratch one for a job without a checkout)."""
        return self._derived(repo=repo, _repository=None, _discovered=False)


#: The acknowledgement that a new memory branch is meant to be named this close to an existing one: its name.
NEW_BRANCH_ENV = "STATEFILE_NEW_BRANCH"


def near_misses(name: str, names: Iterable[str]) -> list[str]:
    """The existing ``names`` that ``name`` may be a typo of: the same but for case, one edit away (a character
    added, dropped or changed, or two neighbours swapped), or nearly the same text (difflib's ratio ≥ 0.9; tighter
    than the usual 0.6 on purpose: branch names share long prefixes such as ``memory/``)."""
    wanted = name.casefold()
    found = []
    for other in names:
        if other == name or other.startswith(name + "/") or name.startswith(other + "/"):
            # One inside the other is no typo: git cannot hold both (its file/folder rule), and says so itself.
            continue
        folded = other.casefold()
        if _one_edit(wanted, folded) or difflib.SequenceMatcher(None, wanted, folded).ratio() >= 0.9:
            found.append(other)
    return found[:3]


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by at most one insertion, deletion, substitution or swap of neighbours."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    a, b = a[start:], b[start:]
    if len(a) == len(b):
        return a[1:] == b[1:] or (len(a) >= 2 and a[0] == b[1] and a[1] == b[0] and a[2:] == b[2:])
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    return shorter == longer[1:]


def _age(seconds: int) -> str:
    """``3 days``, ``5 hours``, ``12 minutes``: how old a copy is, in the largest whole unit."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            return plural(seconds // size, unit)
    return plural(seconds, "second")
