"""What a command runs with: resolved configuration and the store it reads and writes.

The CLI builds one :class:`AppContext` from the global options; commands ask it for the config and the store.
  Everything is resolved lazily so ``statefile --help`` never touches git.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from statefile.app.config import Config, resolve_config
from statefile.defaults import BOT_EMAIL, BOT_NAME
from statefile.errors import NotFoundError, StatefileError, UsageError
from statefile.integrations.repo_memory import RepoMemoryFolder
from statefile.store import FolderStore, GitStore, Repository, Store, find_repository


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
    _config: Config | None = None
    _store: Store | None = None
    _memory_folder: RepoMemoryFolder | None = None
    _repository: Repository | None = None
    _discovered: bool = False

    def repository(self) -> Repository | None:
        """The git repository at or above ``--repo`` (else the cwd), as git finds it; ``None`` when there is none.

        One discovery, by git itself (it honours ``GIT_DIR`` and linked work trees), for both the configuration
        and the store: ``--repo sub`` and ``cd sub`` mean the same repository.  Raises what git reports for a
        repository it refuses (``safe.directory``).
        """
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
            flags: dict[str, Any] = {}
            if self.max_bytes is not None:
                flags["max_bytes"] = self.max_bytes
            if self.branch is not None:
                flags["branch"] = self.branch
            if self.remote is not None:
                flags["remote"] = self.remote
            root = self.root
            self._config = resolve_config(root, flags, self.env)
        return self._config

    def store(self) -> Store:
        """The store commands read and write: a folder with ``--dir``, else the memory branch of the repo."""
        if self._store is not None:
            return self._store
        config = self.config()
        max_bytes = config.max_bytes.value
        if self.repo_memory:
            memory = self.memory_folder()
            if config.remote.value:
                raise UsageError(
                    f"--repo-memory works on gh-aw's memory folder and cannot use a remote ({config.remote.source}); "
                    "drop --remote/STATEFILE_REMOTE or --repo-memory"
                )
            self._store = FolderStore(memory.folder, max_bytes=max_bytes, archive_layout=memory.layout_for)
            return self._store
        if self.folder is not None:
            if config.remote.value:
                raise UsageError(
                    f"--dir works on a plain folder and cannot use a remote ({config.remote.source}); "
                    "drop --remote/STATEFILE_REMOTE or --dir"
                )
            if not self.folder.is_dir():
                raise NotFoundError(f"--dir {self.folder}: no such folder; create it or check the path")
            self._store = FolderStore(self.folder, max_bytes=max_bytes)
            return self._store
        if self.repo is not None and not self.repo.exists():
            raise NotFoundError(f"--repo {self.repo}: no such folder; pass the path of a git repository")
        repository = self.repository()
        if repository is None:
            where = self.repo or Path.cwd()
            raise NotFoundError(
                f"no git repository at or above {where}; run inside a clone, pass --repo PATH, or use --dir PATH"
            )

        author = None
        if config.author_name.value or config.author_email.value:
            author = f"{config.author_name.value or BOT_NAME} <{config.author_email.value or BOT_EMAIL}>"
        store = GitStore(
            repository, branch=config.branch.value, remote=config.remote.value, max_bytes=max_bytes, author=author
        )
        if store.remote is not None:
            # Reads come from local refs; one fetch makes every command see the remote's current state.
            store.fetch()
        self._store = store
        return store

    def memory_folder(self) -> RepoMemoryFolder:
        """gh-aw's repo-memory folder and its push limits (``--repo-memory``): the folder is ``--dir`` if given,
        else ``/tmp/gh-aw/repo-memory/{id}`` from the workflow frontmatter (``default`` without an id)."""
        if self._memory_folder is None:
            config = self.config()
            folder = self.folder if self.folder is not None else Path(config.repo_memory_dir.value)
            if not folder.is_dir():
                where = (
                    "--dir" if self.folder is not None else f"repo-memory's folder ({config.repo_memory_dir.source})"
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

    @property
    def globs(self) -> tuple[str, ...]:
        """Which ``{name}.md`` files are state files (the configured file-glob)."""
        return tuple(self.config().file_glob.value)

    def with_max_bytes(self, max_bytes: int | None) -> AppContext:
        """The same options with a command-level ``--max-bytes`` (``None``: unchanged)."""
        if max_bytes is None:
            return self
        return replace(self, max_bytes=max_bytes, _config=None, _store=None)

    def with_summarizer(self, command: str | None) -> AppContext:
        """The same options with a command-level ``--summarizer`` (``None``: unchanged)."""
        if command is None:
            return self
        return replace(self, env={**self.env, "STATEFILE_SUMMARIZER": command}, _config=None, _store=None)

    def with_folder(self, folder: Path) -> AppContext:
        """The same options, working on the plain folder ``folder`` (used for file-path arguments)."""
        return replace(self, folder=folder, repo_memory=False, _store=None, _memory_folder=None)

    def with_repository(self, repo: Path) -> AppContext:
        """The same options, with the repository at ``repo`` (a scratch one for a job without a checkout)."""
        return replace(self, repo=repo, _store=None, _repository=None, _discovered=False)
