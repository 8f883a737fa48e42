"""Settings and where each came from: flag > env (empty is unset) > TOML > gh-aw workflow frontmatter > default."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Generic, TypeVar

from statefile import defaults
from statefile.defaults import DEFAULT_BRANCH, parse_size
from statefile.errors import UsageError
from statefile.integrations import ghaw
from statefile.integrations.ghaw import DEFAULT_MEMORY_ID, REPO_MEMORY_ROOT
from statefile.redaction import redact, redact_value
from statefile.store.atomic import INPUT_LIMIT, read_regular_file
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
        data = read_regular_file(path, limit=INPUT_LIMIT, what=name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read ({exc.strerror}); check the file's permissions") from None
    try:
        table: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{name}: not valid UTF-8; save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{name}: invalid TOML ({exc}); fix the file") from None
    return table


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
