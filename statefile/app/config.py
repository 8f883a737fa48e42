"""Settings, and where each one came from: one answer to "what is the budget?".

Every setting is resolved from the first of these that sets it:

1. a command-line flag (``--max-bytes 20000``);
2. an environment variable (``STATEFILE_MAX_BYTES=20000``; an empty value counts as unset);
3. ``.statefile.toml`` (top-level keys) or ``[tool.statefile]`` in ``pyproject.toml`` at the repository root, the
   former winning when both set a key;
4. the gh-aw workflow's frontmatter: ``tools.repo-memory`` in ``.github/workflows/*.md`` gives ``max-file-size``,
   ``branch-name`` and ``file-glob`` — the budget repo-memory actually enforces;
5. the default.

Each option carries its own documentation (:data:`OPTIONS`), which ``statefile config`` and docs/configuration.md
show.  Bad keys and values are :class:`~statefile.errors.UsageError` with a one-line message naming the file and key.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Generic, TypeVar

from statefile.defaults import (
    AGGRESSIVE_AT,
    AGGRESSIVE_KEEP,
    DEFAULT_BRANCH,
    DEFAULT_MAX_BYTES,
    KEEP_RECENT,
    SUMMARIZER_TIMEOUT,
    parse_size,
)
from statefile.errors import UsageError
from statefile.integrations.ghaw import (
    DEFAULT_MAX_FILE_COUNT,
    DEFAULT_MAX_PATCH_SIZE,
    DEFAULT_MEMORY_ID,
    REPO_MEMORY_ROOT,
)
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
    """One setting's specification: its TOML key, environment variable, default, parser and documentation."""

    name: str
    default: object
    doc: str
    parse: Callable[[object], object]
    #: The key under ``tools.repo-memory`` in a gh-aw workflow that also sets this option, if any.
    frontmatter_key: str | None = None

    @property
    def key(self) -> str:
        """The key in TOML files, which is also the flag name without ``--``: ``max-bytes``."""
        return self.name.replace("_", "-")

    @property
    def env(self) -> str:
        """The environment variable: ``STATEFILE_MAX_BYTES``."""
        return "STATEFILE_" + self.name.upper()

    @property
    def flag(self) -> str:
        """The command-line flag: ``--max-bytes``."""
        return "--" + self.key


# -- value parsers: each takes what a flag, variable, TOML or YAML gives and returns the value or raises ValueError --


def _positive_int(raw: object) -> int:
    if isinstance(raw, bool):
        raise ValueError(f"must be a whole number of 1 or more, got {raw!r}")
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    if not isinstance(raw, int) or raw < 1:
        raise ValueError(f"must be a whole number of 1 or more, got {raw!r}")
    return raw


def _fraction(raw: object) -> float:
    try:
        value = float(raw) if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) else None
    except ValueError:
        value = None
    if value is None or not 0 < value <= 1:
        raise ValueError(f"must be a fraction greater than 0 and at most 1 (such as 0.8), got {raw!r}")
    return value


def _seconds(raw: object) -> float:
    try:
        value = float(raw) if isinstance(raw, (int, float, str)) and not isinstance(raw, bool) else None
    except ValueError:
        value = None
    if value is None or not 0 < value < float("inf"):
        raise ValueError(f"must be a number of seconds greater than 0, got {raw!r}")
    return value


def _branch(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"must be a branch name such as 'memory/autoloop', got {raw!r}")
    name = raw.strip().removeprefix("refs/heads/")
    try:
        return validate_branch(name)
    except UsageError:
        raise ValueError(f"{raw!r} is not a valid git branch name") from None


def _word(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip() or any(ch.isspace() for ch in raw.strip()):
        raise ValueError(f"must be a single word without spaces, got {raw!r}")
    return raw.strip()


def _globs(raw: object) -> tuple[str, ...]:
    # A list (TOML, YAML) or one string.  As in gh-aw (which joins a list with spaces and splits on whitespace),
    # a string holds several globs separated by spaces; commas separate them too (handy in env variables).
    message = f"must be a glob such as '*.md' or a list of globs, got {raw!r}"
    if isinstance(raw, str):
        items: list[object] = [part for part in raw.replace(",", " ").split() if part]
    elif isinstance(raw, (list, tuple)):
        items = list(raw)
    else:
        raise ValueError(message)
    if not items or not all(isinstance(item, str) and item.strip() for item in items):
        raise ValueError(message)
    return tuple(part for item in items for part in str(item).split())


def _folder(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"must be a folder path such as /tmp/gh-aw/repo-memory/default, got {raw!r}")
    return raw.strip()


def _optional_text(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ValueError(f"must be text, got {raw!r}")
    return raw.strip() or None


OPTIONS: tuple[Option, ...] = (
    Option(
        "max_bytes",
        DEFAULT_MAX_BYTES,
        "Byte budget of one state file.  repo-memory rejects a bigger file after the agent exits, losing the "
        "iteration, so statefile compacts to stay under it.  Accepts 30720 or '30KB'.",
        parse_size,
        "max-file-size",
    ),
    Option(
        "branch",
        DEFAULT_BRANCH,
        "Branch holding the state files (repo-memory's branch-name).",
        _branch,
        "branch-name",
    ),
    Option(
        "remote",
        None,
        "Git remote (a name, or a URL) the branch is fetched from and pushed to (unset: the local branch only).",
        _word,
    ),
    Option(
        "file_glob",
        ("*.md",),
        "Which files on the branch are state files (repo-memory's file-glob); a list, or commas in a variable.",
        _globs,
        "file-glob",
    ),
    Option(
        "keep_recent",
        KEEP_RECENT,
        "Newest iteration entries compaction keeps in full; older ones fold into range lines.",
        _positive_int,
    ),
    Option(
        "aggressive_at",
        AGGRESSIVE_AT,
        "Fraction of max-bytes above which compaction becomes aggressive (keeps aggressive-keep entries) and "
        "'statefile report' says needs_compaction.",
        _fraction,
    ),
    Option(
        "aggressive_keep",
        AGGRESSIVE_KEEP,
        "Newest entries kept in full when the file is above aggressive-at of its budget.",
        _positive_int,
    ),
    Option(
        "summarizer",
        None,
        "Command that summarizes entries folded into a range line (the entries on stdin, one line on stdout).  "
        "Unset: statefile's built-in deterministic summary.",
        _optional_text,
    ),
    Option(
        "summarizer_timeout",
        SUMMARIZER_TIMEOUT,
        "Seconds the summarizer may run before statefile falls back to the built-in summary.",
        _seconds,
    ),
    Option(
        "author_name",
        None,
        "Author name of statefile's commits.  Unset: git's own identity (GIT_AUTHOR_NAME, user.name), else "
        "'statefile'.",
        _optional_text,
    ),
    Option(
        "author_email",
        None,
        "Author email of statefile's commits.  Unset: git's own identity (GIT_AUTHOR_EMAIL, user.email).",
        _optional_text,
    ),
    Option(
        "max_patch_size",
        DEFAULT_MAX_PATCH_SIZE,
        "repo-memory's max-patch-size: the bytes of lines one push may add (its push job aborts above 1.2 times "
        "this).  With --repo-memory, statefile spreads a large compaction over several runs to stay under it.",
        parse_size,
        "max-patch-size",
    ),
    Option(
        "max_file_count",
        DEFAULT_MAX_FILE_COUNT,
        "repo-memory's max-file-count: more matched files than this abort its push ('check --repo-memory' says so).",
        _positive_int,
        "max-file-count",
    ),
    Option(
        "repo_memory_dir",
        f"{REPO_MEMORY_ROOT}/{DEFAULT_MEMORY_ID}",
        "The folder gh-aw clones the memory branch into for the agent: /tmp/gh-aw/repo-memory/{id}, where {id} is "
        "the memory's id (always 'default' for a repo-memory given as one object).  Used with --repo-memory.",
        _folder,
    ),
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
        """Where setting ``name`` came from, in words a person can act on: ``flag --remote``, ``env
        STATEFILE_REMOTE``, ``remote in .statefile.toml``, ``tools.repo-memory.file-glob in
        .github/workflows/autoloop.md frontmatter`` or ``default``.  A file alone does not say which line to change:
        messages name the key in it."""
        option = _BY_NAME[name]
        source: str = getattr(self, name).source
        if source.startswith(SOURCE_DEFAULT) or self.explicit(name):
            return source
        if source.endswith(" frontmatter"):
            return f"tools.repo-memory.{option.frontmatter_key or 'id'} in {source}"
        return f"{option.key} in {source}"

    def explicit(self, name: str) -> bool:
        """Whether setting ``name`` was given for this run (a flag or an environment variable), not read from a
        file or left at its default: an explicit choice outranks anything a file says."""
        source: str = getattr(self, name).source
        return source.startswith(("flag ", "env "))

    def describe(self) -> list[tuple[str, object, str]]:
        """``(key, value, source)`` for every setting, in documentation order (what ``statefile config`` prints).

        Values are redacted: a remote given as ``https://user:token@host`` is printed with the token hidden.
        """
        return [
            (option.key, redact_value(getattr(self, option.name).value), redact(getattr(self, option.name).source))
            for option in OPTIONS
        ]


def option_docs() -> list[tuple[str, str, str, object, str]]:
    """``(key, flag, environment variable, default, doc)`` for every option: help texts, docs/configuration.md."""
    return [(o.key, o.flag, o.env, o.default, o.doc) for o in OPTIONS]


def resolve_config(root: Path | None, flags: Mapping[str, object], env: Mapping[str, str]) -> Config:
    """Resolve every setting from ``flags`` > ``env`` > config files > workflow frontmatter > defaults.

    ``flags`` maps option names (``max_bytes`` or ``max-bytes``) to values; ``None`` means "not given", and keys
    that are not options are ignored, so a command can pass its parameters as they are.  ``env`` is usually
    ``os.environ``.  ``root`` is the repository root; ``None`` reads no files.
    """
    resolved: dict[str, Setting[Any]] = {}
    for raw_name, raw in flags.items():
        option = _BY_NAME.get(raw_name) or _BY_KEY.get(raw_name)
        if option is not None and raw is not None:
            resolved[option.name] = _setting(option, raw, f"flag {option.flag}")
    for option in OPTIONS:
        raw_env = env.get(option.env)
        if option.name not in resolved and raw_env is not None and raw_env.strip():
            resolved[option.name] = _setting(option, raw_env, f"env {option.env}")
    if root is not None:
        for source, table in _config_files(root):
            for option in OPTIONS:
                if option.name not in resolved and option.key in table:
                    resolved[option.name] = _setting(option, table[option.key], source)
        branch = resolved.get("branch")
        for option, raw, source in _frontmatter_values(root, branch.value if branch else None):
            if option.name not in resolved:
                key = f"tools.repo-memory.{option.frontmatter_key or 'id'}"
                resolved[option.name] = _setting(option, raw, source, key)
    for option in OPTIONS:
        resolved.setdefault(option.name, Setting(option.default, SOURCE_DEFAULT))
    config = Config(**resolved)
    if config.aggressive_keep.value > config.keep_recent.value:
        if config.aggressive_keep.source != SOURCE_DEFAULT:
            raise UsageError(
                f"aggressive-keep ({config.aggressive_keep.value}, {config.origin('aggressive_keep')}) is larger than "
                f"keep-recent ({config.keep_recent.value}, {config.origin('keep_recent')}); make it smaller or equal"
            )
        # Only keep-recent was set (e.g. 3): the default aggressive-keep follows it down.
        resolved["aggressive_keep"] = Setting(config.keep_recent.value, f"{SOURCE_DEFAULT} (capped at keep-recent)")
        config = Config(**resolved)
    return config


def _setting(option: Option, raw: object, source: str, key: str | None = None) -> Setting[Any]:
    try:
        return Setting(option.parse(raw), source)
    except ValueError as exc:
        raise UsageError(f"{source}: {key or option.key} {exc}") from None


# -- config files -------------------------------------------------------------------------------------------------


def _config_files(root: Path) -> list[tuple[str, dict[str, object]]]:
    """``(source, table)`` pairs in precedence order: ``.statefile.toml`` first, then ``pyproject.toml``."""
    found: list[tuple[str, dict[str, object]]] = []
    dedicated = _read_toml(root / STATEFILE_TOML, STATEFILE_TOML)
    if dedicated is not None:
        if "tool" in dedicated and set(dedicated) == {"tool"}:
            raise UsageError(f"{STATEFILE_TOML}: put the settings at the top level, without a [tool.statefile] table")
        found.append((STATEFILE_TOML, _checked_table(dedicated, STATEFILE_TOML)))
    pyproject = _read_toml(root / PYPROJECT, PYPROJECT)
    if pyproject is not None:
        tool = pyproject.get("tool")
        table = tool.get("statefile") if isinstance(tool, dict) else None
        source = f"{PYPROJECT} [tool.statefile]"
        if table is not None:
            if not isinstance(table, dict):
                raise UsageError(f"{source}: must be a table of settings, got {type(table).__name__}")
            found.append((source, _checked_table(table, source)))
    return found


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


# -- gh-aw workflow frontmatter -----------------------------------------------------------------------------------


def _frontmatter_values(root: Path, branch: str | None) -> list[tuple[Option, object, str]]:
    """Values from the repo-memory entry of the workflow that writes ``branch`` (default memory/autoloop).

    A workflow's ``tools.repo-memory`` is ``true``, a mapping, or a list of mappings.  The entry whose branch is
    the one we manage wins; when no branch was configured above and there is exactly one entry, that one is used.
    Files whose frontmatter is not YAML are skipped: not every markdown file under workflows is a gh-aw workflow.
    """
    folder = root / WORKFLOWS_DIR
    try:
        paths = sorted(folder.glob("*.md"), key=lambda p: (p.name != "autoloop.md", p.name))
    except OSError:  # pragma: no cover - an unreadable folder reads as no workflows
        return []
    if not paths:
        return []
    entries: list[tuple[str, dict[str, Any], str]] = []
    for path in paths:
        source = f"{WORKFLOWS_DIR}/{path.name} frontmatter"
        entries.extend((source, entry, memory_id) for entry, memory_id in _repo_memory_entries(path, source))
    wanted = branch or DEFAULT_BRANCH
    matching = [(s, e, i) for s, e, i in entries if _entry_branch(e) == wanted]
    if not matching and branch is None and len(entries) == 1:
        matching = entries
    if not matching:
        return []
    source, entry, memory_id = matching[0]
    values: list[tuple[Option, object, str]] = []
    for option in OPTIONS:
        if option.frontmatter_key and option.frontmatter_key in entry:
            values.append((option, entry[option.frontmatter_key], source))
    if "branch-name" not in entry:
        # The branch gh-aw derives from the entry's id and prefix: that is where its files are.
        values.append((_BY_NAME["branch"], _entry_branch(entry), source))
    # Where gh-aw clones this memory for the agent (its repo_memory.go: /tmp/gh-aw/repo-memory/{id}).
    values.append((_BY_NAME["repo_memory_dir"], f"{REPO_MEMORY_ROOT}/{memory_id}", source))
    return values


def _repo_memory_entries(path: Path, source: str) -> list[tuple[dict[str, Any], str]]:
    """The repo-memory entries of one workflow, each with its memory id.

    gh-aw's compiler (``repo_memory.go``) gives ``true`` and the one-object form the id ``default`` whatever the
    object says; only the list form reads each entry's ``id`` (default ``default``).
    """
    import frontmatter
    import yaml

    try:
        text = read_regular_file(path, limit=INPUT_LIMIT, what="the workflow").decode("utf-8")
        # frontmatter.parse, not loads(): a workflow's "on:" key is the boolean True in YAML 1.1, and loads()
        # passes the keys as keyword arguments, which fails on a non-string key.
        metadata, _ = frontmatter.parse(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):
        return []
    tools = metadata.get("tools") if isinstance(metadata, dict) else None
    memory = tools.get("repo-memory") if isinstance(tools, dict) else None
    if memory is None or memory is False:
        return []
    if memory is True:
        return [({}, DEFAULT_MEMORY_ID)]
    raw_entries = memory if isinstance(memory, list) else [memory]
    entries: list[tuple[dict[str, Any], str]] = []
    for item in raw_entries:
        if not isinstance(item, dict):
            # The kind, never the value: a list of lists of YAML aliases would take a billion lines to show.
            raise UsageError(f"{source}: tools.repo-memory entries must be mappings, got a {_yaml_kind(item)}")
        memory_id = str(item.get("id") or DEFAULT_MEMORY_ID) if isinstance(memory, list) else DEFAULT_MEMORY_ID
        entries.append((item, memory_id))
    return entries


def _yaml_kind(value: object) -> str:
    """What a YAML value is, in the words of YAML."""
    kinds = {list: "sequence", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def _entry_branch(entry: dict[str, Any]) -> str:
    """The branch a repo-memory entry writes: ``branch-name``, else ``{branch-prefix or memory}/{id or default}``."""
    name = entry.get("branch-name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    prefix = entry.get("branch-prefix") or "memory"
    return f"{prefix}/{entry.get('id') or 'default'}"


__all__ = [
    "DEFAULT_BRANCH",
    "DEFAULT_MAX_BYTES",
    "OPTIONS",
    "Config",
    "Option",
    "Setting",
    "option_docs",
    "parse_size",
    "resolve_config",
]

# Keep the dataclass and the option table in step: a new option needs a Config field and vice versa.
assert [f.name for f in fields(Config)] == [o.name for o in OPTIONS], "Config fields and OPTIONS disagree"
