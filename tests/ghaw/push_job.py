"""gh-aw's ``push_repo_memory`` job, re-stated (github/gh-aw-actions ``setup/js/push_repo_memory.cjs``, v0.65.6).

What the job does after the agent (ghaw-spec §1.1, §1.4, §1.5):

1. the agent job uploads the memory folder as an artifact — hidden paths (``.git``, any ``.name``) are left out
   (upload-artifact ≥ 4.4 without ``include-hidden-files``): :func:`artifact_of`;
2. a fresh checkout of the default branch; the memory branch is fetched and checked out, or, when the remote has
   no such branch, an orphan branch with an empty index is made;
3. every regular file of the artifact is scanned: one matching no ``file-glob`` pattern is skipped with a warning;
   one over ``max-file-size`` aborts the whole push; more matched files than ``max-file-count`` abort it;
4. the matched files are copied over the branch's (a whole-file, last-writer-wins copy; nothing is ever deleted);
5. ``git add``; the patch size is the sum over ``git diff --cached`` lines starting with ``+`` but not ``+++`` of
   their UTF-8 length + 1; above ``floor(max-patch-size × 1.2)`` the push is aborted;
6. commit "Update repo memory from workflow run N"; then up to 4 times: ``git pull --no-rebase -X ours`` (its
   failure only logged) and ``git push``, backing off 1, 2, 4 s between tries (scaled down here).

The glob is translated as ``glob_pattern_helpers.cjs`` does, step by step (escape ``\\`` and ``.``, escape
``+?^${}()|[]``, ``**`` → ``.*``, ``*`` → ``[^/]*``, anchor) — written independently of statefile's own code so
the two check each other.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ghaw.component import TIMEOUT

BOT = ["-c", "user.name=github-actions[bot]", "-c", "user.email=41898282+github-actions[bot]@users.noreply.github.com"]


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """``globPatternToRegex`` with path mode on, case-sensitive."""
    text = pattern.replace("\\", "\\\\").replace(".", "\\.")
    for ch in "+?^${}()|[]":
        text = text.replace(ch, "\\" + ch)
    text = text.replace("**", "\x00").replace("*", "[^/]*").replace("\x00", ".*")
    return re.compile("^" + text + "$")


def split_filter(value: str) -> list[str]:
    return [part for part in value.strip().split() if part]


def artifact_of(memory_dir: Path, artifact_dir: Path) -> None:
    """What upload-artifact keeps of the memory folder: regular files on paths with no hidden segment."""
    if not memory_dir.is_dir():
        return
    artifact_dir.mkdir(parents=True, exist_ok=True)
    for top, dirs, names in os.walk(memory_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = Path(top).relative_to(memory_dir)
        for name in names:
            if name.startswith("."):
                continue
            source = Path(top, name)
            if stat.S_ISREG(os.lstat(source).st_mode):
                (artifact_dir / rel).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, artifact_dir / rel / name)


def patch_size(diff: str) -> int:
    return sum(len(line.encode("utf-8", "surrogateescape")) + 1 for line in diff.split("\n")
               if line.startswith("+") and not line.startswith("+++"))  # fmt: skip


@dataclass
class PushResult:
    """What one push job did: ``status`` is pushed / no-changes / no-files / no-artifact / failed."""

    status: str
    patch_size: int = 0
    skipped: list[str] = field(default_factory=list)
    error: str | None = None
    commit: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == "failed"


def _git(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=TIMEOUT,
                          env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"})  # fmt: skip
    if check and done.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done


def push_repo_memory(
    artifact_dir: Path,
    *,
    url: str,
    branch: str,
    workspace: Path,
    run_id: str,
    file_glob: str = "*.md",
    max_file_size: int = 10240,
    max_file_count: int = 100,
    max_patch_size: int = 10240,
    backoff_scale: float = 0.01,
) -> PushResult:
    """Run the job once for a downloaded artifact; ``workspace`` must not exist (the job's fresh checkout)."""
    if not artifact_dir.is_dir():
        return PushResult("no-artifact")
    _git(["clone", "--quiet", url, str(workspace)], workspace.parent)
    fetched = _git(["fetch", "--quiet", url, f"{branch}:{branch}"], workspace, check=False)
    if fetched.returncode == 0:
        _git(["checkout", "--quiet", branch], workspace)
    elif re.search(r"couldn't find remote ref|remote branch .* not found", fetched.stderr):
        _git(["checkout", "--quiet", "--orphan", branch], workspace)
        _git(["read-tree", "--empty"], workspace)
        for entry in workspace.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    else:
        return PushResult("failed", error=f"Failed to checkout branch: {fetched.stderr.strip()}")

    patterns = [glob_to_regex(p) for p in split_filter(file_glob)]
    queued: list[str] = []
    skipped: list[str] = []
    for top, dirs, names in os.walk(artifact_dir):
        dirs.sort()
        for name in sorted(names):
            path = Path(top, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            rel = path.relative_to(artifact_dir).as_posix()
            if patterns and not any(p.match(rel) for p in patterns):
                skipped.append(rel)  # "Skipping file that does not match allowed patterns"
                continue
            size = path.stat().st_size
            if size > max_file_size:
                return PushResult(
                    "failed",
                    skipped=skipped,
                    error=f"File exceeds size limit: {rel} ({size} bytes > {max_file_size} bytes)",
                )
            queued.append(rel)
    if len(queued) > max_file_count:
        return PushResult("failed", skipped=skipped, error=f"Too many files ({len(queued)} > {max_file_count})")
    if not queued:
        return PushResult("no-files", skipped=skipped)
    for rel in queued:
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(artifact_dir / rel, target)
    if not _git(["status", "--porcelain"], workspace).stdout.strip():
        return PushResult("no-changes", skipped=skipped)
    _git(["add", "--sparse", "."], workspace)
    size = patch_size(_git(["diff", "--cached"], workspace).stdout)
    limit = math.floor(max_patch_size * 1.2)
    if size > limit:
        return PushResult(
            "failed",
            size,
            skipped,
            error=f"Patch additions size ({size} bytes) exceeds maximum allowed size ({limit} bytes)",
        )
    _git([*BOT, "commit", "--quiet", "-m", f"Update repo memory from workflow run {run_id}"], workspace)
    last = ""
    for attempt in range(4):
        _git([*BOT, "pull", "--quiet", "--no-rebase", "-X", "ours", url, branch], workspace, check=False)
        pushed = _git(["push", "--quiet", url, f"HEAD:{branch}"], workspace, check=False)
        if pushed.returncode == 0:
            commit = _git(["rev-parse", "HEAD"], workspace).stdout.strip()
            return PushResult("pushed", size, skipped, commit=commit)
        last = pushed.stderr
        if attempt < 3:
            time.sleep(backoff_scale * (2**attempt))
    return PushResult("failed", size, skipped, error=f"Failed to push changes after 4 attempts: {last.strip()}")
