"""Building hostile inputs for real: repositories with a bare remote, raw trees on the memory branch, folders.

Everything is written with git's own plumbing (hash-object, mktree, commit-tree, update-ref), never through
statefile, so an input statefile would refuse to write — a symlink, a submodule, a folder or a missing blob named
``perf.md``, a line no writer produces — still ends up exactly as a hostile hand or tool would leave it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from synthetic import synthetic_state

BRANCH = "memory/autoloop"
LOCAL = f"refs/heads/{BRANCH}"
HISTORY_MARK = "<!-- New entries are prepended below this line -->\n"


def git(*args: str, cwd: Path, check: bool = True, stdin: bytes | None = None) -> str:
    """Run git in ``cwd``; its stdout (raises with git's message on failure when ``check``)."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    if check and proc.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "replace")


@dataclass(frozen=True)
class Link:
    """A symbolic link (mode 120000) to ``target``."""

    target: str


@dataclass(frozen=True)
class Gitlink:
    """A submodule entry (mode 160000) pointing at commit ``sha``."""

    sha: str = "1" * 40


@dataclass(frozen=True)
class Missing:
    """A blob entry whose object is not in the repository (a partial clone, a corrupt copy)."""

    sha: str = "2" * 40


Entry = bytes | str | Link | Gitlink | Missing | None


def state(iterations: int = 8, program: str = "perf") -> str:
    """A well-formed state file: the upstream template, lessons, avenues and ``iterations`` entries."""
    return synthetic_state(program, iterations, seed=3)


def with_history(text: str, *lines: str) -> str:
    """``text`` with ``lines`` at the top of its Iteration History (where the newest entries go)."""
    assert HISTORY_MARK in text
    return text.replace(HISTORY_MARK, HISTORY_MARK + "\n" + "\n\n".join(lines) + "\n", 1)


def with_field(text: str, field: str, value: str) -> str:
    """``text`` with Machine State's ``field`` row set to ``value`` (the row must exist)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(f"| {field} |"):
            lines[i] = f"| {field} | {value} |"
            return "\n".join(lines)
    raise AssertionError(f"no {field} row")


def _blob(repo: Path, data: bytes) -> str:
    return git("hash-object", "-w", "--stdin", cwd=repo, stdin=data).strip()


def _tree(repo: Path, entries: Mapping[str, tuple[str, str, str]], subtrees: Mapping[str, dict]) -> str:
    lines = [f"{mode} {kind} {sha}\t{name}" for name, (mode, kind, sha) in entries.items()]
    for name, sub in subtrees.items():
        lines.append(f"040000 tree {_build(repo, sub)}\t{name}")
    data = "".join(line + "\0" for line in lines).encode("utf-8", "surrogateescape")
    return git("mktree", "-z", "--missing", cwd=repo, stdin=data).strip()


def _build(repo: Path, nested: dict) -> str:
    entries = {k: v for k, v in nested.items() if isinstance(v, tuple)}
    subtrees = {k: v for k, v in nested.items() if isinstance(v, dict)}
    return _tree(repo, entries, subtrees)


def put_branch(repo: Path, files: Mapping[str, Entry], *, ref: str = LOCAL, message: str = "hostile input") -> str:
    """Commit ``files`` on top of ``ref`` (paths → content; ``None`` deletes) with plumbing; the new commit."""
    parent = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo, check=False).strip()
    flat: dict[str, tuple[str, str, str]] = {}
    if parent:
        listing = git("ls-tree", "-r", "-z", "--full-tree", parent, cwd=repo)
        for record in filter(None, listing.split("\0")):
            meta, path = record.split("\t", 1)
            mode, kind, sha = meta.split()
            flat[path] = (mode, kind, sha)
    for path, entry in files.items():
        for existing in [p for p in flat if p == path or p.startswith(path + "/")]:
            del flat[existing]
        if entry is None:
            continue
        if isinstance(entry, Link):
            flat[path] = ("120000", "blob", _blob(repo, entry.target.encode()))
        elif isinstance(entry, Gitlink):
            flat[path] = ("160000", "commit", entry.sha)
        elif isinstance(entry, Missing):
            flat[path] = ("100644", "blob", entry.sha)
        else:
            data = entry.encode("utf-8") if isinstance(entry, str) else entry
            flat[path] = ("100644", "blob", _blob(repo, data))
    nested: dict = {}
    for path, value in flat.items():
        *dirs, name = path.split("/")
        node = nested
        for part in dirs:
            node = node.setdefault(part, {})
        node[name] = value
    tree = _build(repo, nested)
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    commit = git(*args, cwd=repo).strip()
    git("update-ref", "--no-deref", ref, commit, cwd=repo)
    return commit


@dataclass
class Repos:
    """A bare ``remote`` and a clone ``work`` (main checked out, ``perf`` on the memory branch, pushed)."""

    root: Path
    remote: Path
    work: Path

    def push(self, *, force: bool = False) -> None:
        """Push the memory branch to the remote as it is now."""
        git("push", "--quiet", *(["--force"] if force else []), "origin", f"{LOCAL}:{LOCAL}", cwd=self.work)

    def tip(self, ref: str = LOCAL, where: Path | None = None) -> str:
        return git("rev-parse", "--verify", "--quiet", ref, cwd=where or self.work, check=False).strip()


def make_repos(root: Path, *, files: Mapping[str, Entry] | None = None, push: bool = True) -> Repos:
    """A bare remote and a clone with main pushed and the memory branch holding ``perf`` (and ``files``)."""
    remote, work = root / "remote.git", root / "work"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote), cwd=root)
    git("init", "--quiet", "--initial-branch=main", str(work), cwd=root)
    (work / "README.md").write_text("project\n")
    git("add", "README.md", cwd=work)
    git("commit", "--quiet", "-m", "init", cwd=work)
    git("remote", "add", "origin", str(remote), cwd=work)
    git("push", "--quiet", "origin", "main", cwd=work)
    repos = Repos(root, remote, work)
    put_branch(work, {"perf.md": state(), "other.md": state(3, "other"), **(files or {})}, message="seed")
    if push:
        repos.push()
    return repos


def make_folder(root: Path, files: Mapping[str, str | bytes] | None = None) -> Path:
    """A folder store holding ``perf`` and ``other`` (and ``files``, written as given)."""
    folder = root / "memory"
    folder.mkdir()
    everything: dict[str, str | bytes] = {"perf.md": state(), "other.md": state(3, "other"), **(files or {})}
    for name, content in everything.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return folder


def fifo(path: Path) -> Path:
    """Replace ``path`` with a FIFO (a reader that opens it without O_NONBLOCK waits forever)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
    return path


def hook(repo: Path, name: str, script: str) -> None:
    """Install an executable hook ``name`` (sh) in ``repo`` (bare or not)."""
    hooks = repo / "hooks" if (repo / "HEAD").is_file() and not (repo / ".git").exists() else repo / ".git" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    path = hooks / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)
