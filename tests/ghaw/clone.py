"""The two clones of the memory branch a run makes before the agent, re-stated.

- :func:`scheduler_clone`: Autoloop's own pre-step "Clone repo-memory for scheduling" (githubnext/autoloop
  ``workflows/autoloop.md`` lines 88-108): ``git ls-remote --exit-code --heads``; a shallow single-branch clone to
  ``/tmp/gh-aw/repo-memory/autoloop`` when the branch exists, else an empty folder.
- :func:`repo_memory_clone`: gh-aw's ``setup/sh/clone_repo_memory_branch.sh`` (v0.65.6, ghaw-spec §2): a shallow
  clone to ``/tmp/gh-aw/repo-memory/{id}``; any failure counts as "no branch" and, with ``CREATE_ORPHAN=true``,
  an empty repository on an orphan branch with ``origin`` set.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ghaw.component import TIMEOUT

BOT = ("-c", "user.name=github-actions[bot]", "-c", "user.email=41898282+github-actions[bot]@users.noreply.github.com")


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=TIMEOUT)


def scheduler_clone(url: str, branch: str, memory_dir: Path) -> bool:
    """Autoloop's pre-step clone; True when the branch existed and was cloned."""
    memory_dir.parent.mkdir(parents=True, exist_ok=True)
    if _git("ls-remote", "--exit-code", "--heads", url, branch).returncode == 0:
        done = _git("clone", "--quiet", "--single-branch", "--branch", branch, "--depth", "1", url, str(memory_dir))
        if done.returncode:
            raise AssertionError(f"clone failed: {done.stderr}")
        return True
    memory_dir.mkdir(parents=True, exist_ok=True)
    return False


def repo_memory_clone(url: str, branch: str, memory_dir: Path, *, create_orphan: bool = True) -> bool:
    """gh-aw's clone for the agent; True when the branch was cloned, False when an orphan was set up."""
    done = _git("clone", "--quiet", "--depth", "1", "--single-branch", "--branch", branch, url, str(memory_dir))
    if done.returncode == 0:
        for key, value in (("user.name", "github-actions[bot]"), ("user.email", "github-actions[bot]@users")):
            _git("config", key, value, cwd=memory_dir)
        return True
    memory_dir.mkdir(parents=True, exist_ok=True)
    if create_orphan:
        _git("init", "--quiet", cwd=memory_dir)
        _git("checkout", "--quiet", "--orphan", branch, cwd=memory_dir)
        _git("remote", "add", "origin", url, cwd=memory_dir)
    return False
