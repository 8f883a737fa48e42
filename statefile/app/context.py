"""What a command runs with, resolved lazily (``--help`` never touches git): the settings and where each came from
(flag > env (empty is unset) > TOML > gh-aw workflow frontmatter > default), and the store."""

from __future__ import annotations

import contextlib
import difflib
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from statefile import defaults
from statefile.defaults import BOT_EMAIL, BOT_NAME, DEFAULT_BRANCH, parse_size
from statefile.errors import InterruptedWrite, NotFoundError, StatefileError, UsageError
from statefile.integrations import ghaw
from statefile.integrations.ghaw import DEFAULT_MEMORY_ID, REPO_MEMORY_ROOT, RepoMemoryFolder
from statefile.numbers import plural
from statefile.redaction import redact, redact_value
from statefile.store import FolderStore, GitStore, Repository, Store, find_repository
from statefile.store.atomic import INPUT_LIMIT, read_regular_file
from statefile.store.git.branches import decide
from statefile.store.names import validate_branch

if sys.version_info >= (3, 11):  # pragma: no cover - depends on the interpreter
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

T = TypeVar("T")

SOURCE_DEFAULT = "default"
PYPROJECT = "pyproject.toml"
STATEFILE_TOML = ".statefile.toml"
WORKFLOWS_DIR = ".github/workflows"


@dataclass(frozen=True)
class Setting(Generic[T]):
    """A resolved value and where it came from (``"flag --max-bytes"``, ``"env STATEFILE_MAX_BYTES"``, …)."""

    value: T
    source: str


@dataclass(frozen=True)
class Option:
    """One setting: its name, default, parser, and the ``tools.repo-memory`` key that sets it (its doc: ``_DOCS``)."""

    name: str
    default: object
    parse: Callable[[object], object]
    frontmatter_key: str | None = None

    @property
    def key(self) -> str:
        """The key in TOML files, and the flag without ``--``: ``max-bytes``."""
        return self.name.replace("_", "-")

    @property
    def env(self) -> str:
        """The environment variable: ``STATEFILE_MAX_BYTES``."""
        return "STATEFILE_" + self.name.upper()


def _must_be(wants: str, convert: Callable[[Any], Any]) -> Callable[[object], Any]:
    """A parser of what a flag, variable, TOML or YAML gives: ``convert``'s None, an error or a boolean is refused."""

    def parse(raw: object) -> Any:
        try:
            value = None if isinstance(raw, bool) else convert(raw)
        except (ValueError, TypeError, AttributeError):
            value = None
        if value is None:
            raise ValueError(f"must be {wants}, got {raw!r}")
        return value

    return parse


def _whole(raw: Any) -> int | None:
    number = int(raw.strip()) if isinstance(raw, str) and raw.strip().isdigit() else raw
    return number if isinstance(number, int) and number >= 1 else None


def _globs(raw: Any) -> tuple[str, ...] | None:
    # As in gh-aw (which joins a list with spaces and splits on whitespace) a string holds several globs; so do commas.
    items = raw.replace(",", " ").split() if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not items or not all(isinstance(i, str) and i.strip() for i in items):
        return None
    return tuple(part for item in items for part in item.split())


def _branch(raw: object) -> str:
    name = _must_be("a branch name such as 'memory/autoloop'", lambda raw: raw.strip() or None)(raw)
    try:
        return validate_branch(name.removeprefix("refs/heads/"))
    except UsageError:
        raise ValueError(f"{raw!r} is not a valid git branch name") from None


def _optional_text(raw: object) -> str | None:
    if raw is not None and not isinstance(raw, str):
        raise ValueError(f"must be text, got {raw!r}")
    return raw.strip() or None if raw is not None else None


_DOCS = {
    "max_bytes": "Byte budget of one state file.  repo-memory rejects a bigger file after the agent exits, losing the "
    "iteration, so statefile compacts to stay under it.  Accepts 30720 or '30KB'.",
    "branch": "Branch holding the state files (repo-memory's branch-name).",
    "remote": "Git remote (a name, or a URL) the branch is fetched from and pushed to (unset: the local branch only).",
    "file_glob": "Which files on the branch are state files (repo-memory's file-glob): a list, or commas in one.",
    "keep_recent": "Newest iteration entries compaction keeps in full; older ones fold into range lines.",
    "aggressive_at": "Fraction of max-bytes above which compaction becomes aggressive (keeps aggressive-keep entries) "
    "and 'statefile report' says needs_compaction.",
    "aggressive_keep": "Newest entries kept in full when the file is above aggressive-at of its budget.",
    "summarizer": "Command that summarizes entries folded into a range line (the entries on stdin, one line on "
    "stdout).  Unset: statefile's built-in deterministic summary.",
    "summarizer_timeout": "Seconds the summarizer may run before statefile falls back to the built-in summary.",
    "author_name": "Author name of statefile's commits.  Unset: git's (GIT_AUTHOR_NAME, user.name), else 'statefile'.",
    "author_email": "Author email of statefile's commits.  Unset: git's own identity (GIT_AUTHOR_EMAIL, user.email).",
    "max_patch_size": "repo-memory's max-patch-size: the bytes of lines one push may add (its push job aborts above "
    "1.2 times this).  With --repo-memory, statefile spreads a large compaction over several runs to stay under it.",
    "max_file_count": "repo-memory's max-file-count: more matched files abort its push; 'check --repo-memory' warns.",
    "repo_memory_dir": "The folder gh-aw clones the memory branch into for the agent, /tmp/gh-aw/repo-memory/{id} "
    "({id} is 'default' for a repo-memory given as one object).  Used with --repo-memory.",
}
_POSITIVE = _must_be("a whole number of 1 or more", _whole)
_FRACTION = _must_be(
    "a fraction greater than 0 and at most 1 (such as 0.8)", lambda raw: x if 0 < (x := float(raw)) <= 1 else None
)
_SECONDS = _must_be(
    "a number of seconds greater than 0", lambda raw: x if 0 < (x := float(raw)) <= sys.float_info.max else None
)
_WORD = _must_be("a single word without spaces", lambda raw: raw.strip() if len(raw.split()) == 1 else None)
_FOLDER = _must_be("a folder path such as /tmp/gh-aw/repo-memory/default", lambda raw: raw.strip() or None)
OPTIONS: tuple[Option, ...] = (
    Option("max_bytes", defaults.DEFAULT_MAX_BYTES, parse_size, "max-file-size"),
    Option("branch", DEFAULT_BRANCH, _branch, "branch-name"),
    Option("remote", None, _WORD),
    Option("file_glob", ("*.md",), _must_be("a glob such as '*.md' or a list of globs", _globs), "file-glob"),
    Option("keep_recent", defaults.KEEP_RECENT, _POSITIVE),
    Option("aggressive_at", defaults.AGGRESSIVE_AT, _FRACTION),
    Option("aggressive_keep", defaults.AGGRESSIVE_KEEP, _POSITIVE),
    Option("summarizer", None, _optional_text),
    Option("summarizer_timeout", defaults.SUMMARIZER_TIMEOUT, _SECONDS),
    Option("author_name", None, _optional_text),
    Option("author_email", None, _optional_text),
    Option("max_patch_size", ghaw.DEFAULT_MAX_PATCH_SIZE, parse_size, "max-patch-size"),
    Option("max_file_count", ghaw.DEFAULT_MAX_FILE_COUNT, _POSITIVE, "max-file-count"),
    Option("repo_memory_dir", f"{REPO_MEMORY_ROOT}/{DEFAULT_MEMORY_ID}", _FOLDER),
)
_BY_NAME = {option.name: option for option in OPTIONS}
_BY_KEY = {option.key: option for option in OPTIONS}


@dataclass(frozen=True)
class Config:
    """Every setting, resolved, with its source.  Build one with :func:`resolve_config`."""

    max_bytes: Setting[int]
    branch: Setting[str]
    remote: Setting[str]
    file_glob: Setting[tuple[str, ...]]
    keep_recent: Setting[int]
    aggressive_at: Setting[float]
    aggressive_keep: Setting[int]
    summarizer: Setting[str | None]
    summarizer_timeout: Setting[float]
    author_name: Setting[str | None]
    author_email: Setting[str | None]
    max_patch_size: Setting[int]
    max_file_count: Setting[int]
    repo_memory_dir: Setting[str]

    def origin(self, name: str) -> str:
        """Where setting ``name`` came from, naming the key to change (``remote in .statefile.toml``)."""
        option = _BY_NAME[name]
        source: str = getattr(self, name).source
        if source.startswith(SOURCE_DEFAULT) or self.explicit(name):
            return source
        if source.endswith(" frontmatter"):
            return f"tools.repo-memory.{option.frontmatter_key or 'id'} in {source}"
        return f"{option.key} in {source}"

    def explicit(self, name: str) -> bool:
        """Whether setting ``name`` was given for this run (a flag or a variable): it outranks what files say."""
        return str(getattr(self, name).source).startswith(("flag ", "env "))

    def describe(self) -> list[tuple[str, object, str]]:
        """``(key, value, source)`` for every setting in documentation order (``statefile config``), redacted."""
        return [(o.key, redact_value(s.value), redact(s.source)) for o in OPTIONS for s in [getattr(self, o.name)]]


def option_docs() -> list[tuple[str, str, str, object, str]]:
    """``(key, flag, environment variable, default, doc)`` for every option: help texts, docs/configuration.md."""
    return [(o.key, f"--{o.key}", o.env, o.default, _DOCS[o.name]) for o in OPTIONS]


def resolve_config(root: Path | None, flags: Mapping[str, object], env: Mapping[str, str]) -> Config:
    """Every setting from ``flags`` (``None``: not given) > ``env`` > files under ``root`` (if any) > defaults."""
    resolved: dict[str, Setting[Any]] = {}

    def take(values: Iterable[tuple[Option | None, object, str]]) -> None:
        for option, raw, source in values:
            if option is not None and option.name not in resolved:
                try:
                    resolved[option.name] = Setting(option.parse(raw), source)
                except ValueError as exc:
                    named = source.endswith(" frontmatter")
                    key = f"tools.repo-memory.{option.frontmatter_key or 'id'}" if named else option.key
                    raise UsageError(f"{source}: {key} {exc}") from None

    options = ((_BY_NAME.get(name) or _BY_KEY.get(name), raw) for name, raw in flags.items() if raw is not None)
    take((option, raw, f"flag --{option.key}" if option else "") for option, raw in options)
    take((option, env[option.env], f"env {option.env}") for option in OPTIONS if env.get(option.env, "").strip())
    if root is not None:  # .statefile.toml, then pyproject.toml; each file is checked before any value is taken
        dedicated = _read_toml(root / STATEFILE_TOML, STATEFILE_TOML)
        if dedicated is not None and set(dedicated) == {"tool"}:
            raise UsageError(f"{STATEFILE_TOML}: put the settings at the top level, without a [tool.statefile] table")
        files = [(STATEFILE_TOML, _checked_table(dedicated, STATEFILE_TOML))] if dedicated is not None else []
        tool = (_read_toml(root / PYPROJECT, PYPROJECT) or {}).get("tool")
        table, source = tool.get("statefile") if isinstance(tool, dict) else None, f"{PYPROJECT} [tool.statefile]"
        if table is not None and not isinstance(table, dict):
            raise UsageError(f"{source}: must be a table of settings, got {type(table).__name__}")
        files += [(source, _checked_table(table, source))] if table is not None else []
        take((o, table[o.key], source) for source, table in files for o in OPTIONS if o.key in table)
    branch = resolved.get("branch")
    take(_frontmatter_values(root, branch.value if branch else None) if root else [])
    for option in OPTIONS:
        resolved.setdefault(option.name, Setting(option.default, SOURCE_DEFAULT))
    config = Config(**resolved)
    if config.aggressive_keep.value > config.keep_recent.value:
        if config.aggressive_keep.source != SOURCE_DEFAULT:
            both = [f"({getattr(config, n).value}, {config.origin(n)})" for n in ("aggressive_keep", "keep_recent")]
            raise UsageError(f"aggressive-keep {both[0]} is larger than keep-recent {both[1]}; make it smaller")
        # Only keep-recent was set (e.g. 3): the default aggressive-keep follows it down.
        resolved["aggressive_keep"] = Setting(config.keep_recent.value, f"{SOURCE_DEFAULT} (capped at keep-recent)")
        config = Config(**resolved)
    return config


def _read_toml(path: Path, name: str) -> dict[str, Any] | None:
    try:
        return dict(tomllib.loads(read_regular_file(path, limit=INPUT_LIMIT, what=name).decode("utf-8")))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read ({exc.strerror}); check the file's permissions") from None
    except UnicodeDecodeError:
        raise UsageError(f"{name}: not valid UTF-8; save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{name}: invalid TOML ({exc}); fix the file") from None


def _checked_table(table: dict[str, Any], source: str) -> dict[str, object]:
    """Keys normalized to their documented spelling (``max_bytes`` is accepted for ``max-bytes``); unknown → error."""
    checked: dict[str, object] = {}
    for key, value in table.items():
        normal = key.replace("_", "-")
        if normal not in _BY_KEY:
            close = difflib.get_close_matches(normal, list(_BY_KEY), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise UsageError(f"{source}: unknown key '{key}'{hint}; valid keys: {', '.join(sorted(_BY_KEY))}")
        if normal in checked:
            raise UsageError(f"{source}: '{normal}' is set twice (as '{normal}' and '{normal.replace('-', '_')}')")
        checked[normal] = value
    return checked


def _frontmatter_values(root: Path, branch: str | None) -> list[tuple[Option, object, str]]:
    """Values of the workflow's repo-memory entry for ``branch`` (else the only one), as gh-aw's repo_memory.go does."""
    entries: list[tuple[str, dict[str, Any], str]] = []
    for path in sorted((root / WORKFLOWS_DIR).glob("*.md"), key=lambda p: (p.name != "autoloop.md", p.name)):
        import frontmatter  # here: report and list outside a gh-aw repository load no YAML
        import yaml

        source = f"{WORKFLOWS_DIR}/{path.name} frontmatter"
        try:
            text = read_regular_file(path, limit=INPUT_LIMIT, what="the workflow").decode("utf-8")
            # parse, not loads(): "on:" is the boolean True in YAML 1.1, which loads() cannot pass as a keyword.
            metadata, _ = frontmatter.parse(text)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):
            continue
        tools = metadata.get("tools") if isinstance(metadata, dict) else None
        memory = tools.get("repo-memory") if isinstance(tools, dict) else None
        items = [{}] if memory is True else [] if memory is None or memory is False else memory
        for item in items if isinstance(items, list) else [items]:
            if not isinstance(item, dict):
                # The kind, never the value: a list of lists of YAML aliases would take a billion lines to show.
                kinds = {list: "sequence", str: "string", bool: "boolean", int: "number", float: "number"}
                kind = "null" if item is None else kinds.get(type(item), type(item).__name__)
                raise UsageError(f"{source}: tools.repo-memory entries must be mappings, got a {kind}")
            memory_id = str(item.get("id") or DEFAULT_MEMORY_ID) if isinstance(memory, list) else DEFAULT_MEMORY_ID
            entries.append((source, item, memory_id))
    matching = [(s, e, i) for s, e, i in entries if _entry_branch(e) == (branch or DEFAULT_BRANCH)]
    matching = matching or (entries if branch is None and len(entries) == 1 else [])
    if not matching:
        return []
    source, entry, memory_id = matching[0]
    found = [(o, entry[o.frontmatter_key], source) for o in OPTIONS if o.frontmatter_key and o.frontmatter_key in entry]
    if "branch-name" not in entry:
        # The branch gh-aw derives from the entry's id and prefix: that is where its files are.
        found.append((_BY_NAME["branch"], _entry_branch(entry), source))
    # Where gh-aw clones this memory for the agent (its repo_memory.go: /tmp/gh-aw/repo-memory/{id}).
    found.append((_BY_NAME["repo_memory_dir"], f"{REPO_MEMORY_ROOT}/{memory_id}", source))
    return found


def _entry_branch(entry: dict[str, Any]) -> str:
    """The branch a repo-memory entry writes: ``branch-name``, else ``{branch-prefix or memory}/{id or default}``."""
    name = entry.get("branch-name")
    name = name.strip() if isinstance(name, str) else None
    return name or f"{entry.get('branch-prefix') or 'memory'}/{entry.get('id') or 'default'}"


# Keep the dataclass and the option table in step: a new option needs a Config field and vice versa.
assert [f.name for f in fields(Config)] == [o.name for o in OPTIONS], "Config fields and OPTIONS disagree"


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
