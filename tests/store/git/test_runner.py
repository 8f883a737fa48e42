"""store/git/runner.py: finding the repository, and what is said when git or the folder is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from statefile.errors import GitError, NotFoundError
from statefile.store.git.runner import discover


def test_a_missing_git_is_named_as_such(tmp_path: Path) -> None:
    """Issue 23 review: when the folder is there and git is not, the advice is to install git, not to check a path."""
    with pytest.raises(GitError, match=r"^cannot run git; install git and put it on PATH$"):
        discover(tmp_path, exe=str(tmp_path / "no-git-here"))


def test_a_missing_or_plain_file_path_is_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such folder; pass the path of a git repository"):
        discover(tmp_path / "absent", exe=str(tmp_path / "no-git-here"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotFoundError, match="not a folder; pass the path of a git repository"):
        discover(tmp_path / "file", exe=str(tmp_path / "no-git-here"))
    with pytest.raises(NotFoundError, match="not inside a git repository"):
        discover(tmp_path)
