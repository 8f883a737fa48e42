"""gh-aw's repo-memory folder as its push job will see it: which files reach the branch, and what a push adds.

In a gh-aw run the agent edits ``/tmp/gh-aw/repo-memory/{id}`` (a clone of the memory branch); after the agent, the
``push_repo_memory`` job copies every file of that folder matching ``file-glob`` over the latest branch, refuses
the whole push when one matched file exceeds ``max-file-size``, when more than ``max-file-count`` files match, or
when the lines it adds exceed ``floor(max-patch-size × 1.2)`` bytes (github/gh-aw-actions
``setup/js/push_repo_memory.cjs`` v0.65.6 lines 224-429).  :class:`RepoMemoryFolder` answers the questions a
writer in that folder must ask *before* writing:

- where an archive part may go so that the glob lets it through (:meth:`RepoMemoryFolder.layout_for`);
- how many bytes the push would count for a file's new text, measured the way the push job measures it — git's
  own diff against the clone's ``HEAD`` (:meth:`RepoMemoryFolder.added_bytes`);
- what the folder already adds outside the files being written (:meth:`RepoMemoryFolder.pending_bytes`);
- what ``statefile check`` must report (:meth:`RepoMemoryFolder.problems`).

Its baseline is the clone's ``HEAD``: the branch as the run found it.  The push job diffs against the branch tip
at push time, which is the same commit unless another run pushed in between — and then repo-memory's
last-writer-wins copy loses that run's update anyway (that is why the safe-output path exists).
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from statefile.defaults import SHARED_PROGRAM
from statefile.errors import GitError, UsageError
from statefile.integrations.ghaw import added_lines_bytes, effective_patch_limit, glob_matches, patch_added_bytes
from statefile.model.archive import LAYOUT_KINDS, ROOT_ARCHIVE_PREFIX, ArchiveLayout, part_number
from statefile.model.text import split_lines
from statefile.numbers import number_text, plural, size_text
from statefile.redaction import redact
from statefile.store.git.repo import git_executable
from statefile.store.names import is_program_name

# A git that behaves like the push job's fresh runner: no user or system configuration (diff.algorithm, …).
_PRISTINE = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C", "LANGUAGE": "C"}
_GIT_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR")


@dataclass(frozen=True)
class Problem:
    """One finding of :meth:`RepoMemoryFolder.problems`: ``error`` (the push would fail or drop it), ``warning``,
    or ``info`` (nothing this run must fix)."""

    severity: str
    message: str


class RepoMemoryFolder:
    """One repo-memory folder with its push limits (``globs`` empty = no file-glob filter)."""

    def __init__(
        self,
        folder: Path,
        *,
        globs: tuple[str, ...],
        max_file_size: int,
        max_patch_size: int,
        max_file_count: int,
    ) -> None:
        self.folder = folder
        self.globs = globs
        self.max_file_size = max_file_size
        self.max_patch_size = max_patch_size
        self.max_file_count = max_file_count
        self._baselines: dict[str, str | None] = {}
        self._costs: dict[tuple[str, str], int] = {}
        self._head: bool | None = None

    def __repr__(self) -> str:
        return f"<RepoMemoryFolder {self.folder} globs={' '.join(self.globs)!r}>"

    @property
    def patch_limit(self) -> int:
        """The added bytes at which the push job aborts (1.2 × max-patch-size, floored)."""
        return effective_patch_limit(self.max_patch_size)

    # -- where files may go --------------------------------------------------------------------------------------

    def reaches_branch(self, path: str) -> bool:
        """Whether the push job copies ``path`` (relative, ``/``-separated) to the branch."""
        # upload-artifact leaves out hidden paths (a segment starting with "."), before the glob is even applied.
        return not any(part.startswith(".") for part in path.split("/")) and glob_matches(path, self.globs)

    def layout_for(self, program: str) -> ArchiveLayout:
        """The first archive layout (``archive/{p}/``, then ``archive/{p}.NNNN.md``, then ``_archive.{p}.NNNN.md``)
        whose part paths the glob lets through; UsageError when none does — a glob that can hold no archive
        would silently lose everything compaction folds away, so nothing is written.
        """
        for kind in LAYOUT_KINDS:
            layout = ArchiveLayout(kind)
            if all(self.reaches_branch(layout.part_path(program, name)) for name in ("0001.md", "0123.md")):
                return layout
        raise UsageError(
            f"repo-memory's file-glob ({' '.join(self.globs)}) lets no archive file of '{program}' reach the branch "
            f"(tried {', '.join(ArchiveLayout(k).part_path(program, '0001.md') for k in LAYOUT_KINDS)}); nothing "
            "was written — add '*.md' (or 'archive/**') to file-glob"
        )

    def require_state_path(self, program: str) -> None:
        """UsageError when ``{program}.md`` itself would not reach the branch."""
        path = f"{program}.md"
        if not self.reaches_branch(path):
            raise UsageError(
                f"repo-memory's file-glob ({' '.join(self.globs)}) does not let {path} reach the branch; nothing "
                "was written — add '*.md' to file-glob"
            )

    # -- the baseline: the clone's HEAD ------------------------------------------------------------------------------

    def _git(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        env = {k: v for k, v in os.environ.items() if k not in _GIT_VARIABLES} | _PRISTINE
        try:
            return subprocess.run(
                [git_executable(), *args], cwd=self.folder, env=env, input=stdin, capture_output=True, check=False
            )
        except OSError as exc:
            raise GitError(f"cannot run git in {self.folder} ({exc.strerror}); install git") from None

    @property
    def has_baseline(self) -> bool:
        """Whether the folder is the top of a git clone (repo-memory's folder always is), so a push can be measured.

        An unborn branch (gh-aw's fresh orphan) has a baseline too: the empty tree.
        """
        if self._head is None:
            if not (self.folder / ".git").exists():
                self._head = False
            else:
                top = self._git("rev-parse", "--show-toplevel")
                self._head = top.returncode == 0 and Path(os.fsdecode(top.stdout.strip())).resolve() == (
                    self.folder.resolve()
                )
        return self._head

    def baseline(self, path: str) -> str | None:
        """The text of ``path`` at the clone's HEAD, ``None`` when it is not there (a new file)."""
        if path not in self._baselines:
            text: str | None = None
            if self.has_baseline:
                shown = self._git("cat-file", "blob", f"HEAD:{path}")
                if shown.returncode == 0:
                    text = shown.stdout.decode("utf-8", "surrogateescape")
            self._baselines[path] = text
        return self._baselines[path]

    def unchanged(self, path: str) -> bool:
        """Whether ``path`` in the folder is exactly as the clone's HEAD has it (so no push of this run changes it)."""
        old = self.baseline(path)
        if old is None:
            return False
        try:
            return (self.folder / path).read_bytes().decode("utf-8", "surrogateescape") == old
        except OSError:
            return False

    def added_bytes(self, path: str, new: str | None) -> int:
        """The bytes the push job would count for ``path`` changing from its baseline to ``new``.

        ``None`` (the file stays as it was, or is deleted — the job never deletes) adds nothing.  A file that only
        grew at its end (an archive part) is counted directly; anything else through ``git diff`` itself.
        """
        if new is None:
            return 0
        old = self.baseline(path) if self.has_baseline else None
        if old == new:
            return 0
        if old is None or old == "":
            return added_lines_bytes(line.rstrip("\r\n") for line in split_lines(new))
        if new.startswith(old) and old.endswith("\n"):
            return added_lines_bytes(line.rstrip("\r\n") for line in split_lines(new[len(old) :]))
        return patch_added_bytes(self._diff(old, new))

    def _diff(self, old: str, new: str) -> str:
        import tempfile  # here, not at the top: only a write that reshapes a file needs it

        with tempfile.TemporaryDirectory(prefix="statefile-patch-") as tmp:
            a, b = Path(tmp, "a"), Path(tmp, "b")
            a.write_bytes(old.encode("utf-8", "surrogateescape"))
            b.write_bytes(new.encode("utf-8", "surrogateescape"))
            # --diff-algorithm=default: Myers, as the push job's `git diff --cached` on a fresh runner.
            proc = self._git("diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv",
                             "--diff-algorithm=default", "--", str(a), str(b))  # fmt: skip
        if proc.returncode not in (0, 1):
            raise GitError(redact(f"git diff failed in {self.folder}: {proc.stderr.decode('utf-8', 'replace')}"))
        return proc.stdout.decode("utf-8", "surrogateescape")

    # -- the folder as the push job sees it ----------------------------------------------------------------------

    def files(self) -> dict[str, int]:
        """Every regular file below the folder except ``.git``: relative path → size (what the job scans)."""
        found: dict[str, int] = {}
        for top, dirs, names in os.walk(self.folder):
            rel = Path(top).relative_to(self.folder)
            dirs[:] = sorted(d for d in dirs if not (rel == Path(".") and d == ".git"))
            for name in sorted(names):
                path = Path(top, name)
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode):
                    found[(rel / name).as_posix()] = info.st_size
        return found

    def matched(self) -> dict[str, int]:
        """The files the push job would copy: path → size."""
        return {path: size for path, size in self.files().items() if self.reaches_branch(path)}

    def pending_bytes(self, exclude: Iterable[str] = ()) -> int:
        """What the folder adds now (every matched file against the baseline), leaving out ``exclude``."""
        if not self.has_baseline:
            return 0
        skip = set(exclude)
        return sum(self._added_cached(path, text) for path, text in self.snapshot().items() if path not in skip)

    def problems(self, programs: Iterable[str]) -> list[Problem]:
        """What would make the push job drop a file statefile wrote, or abort the push."""
        found: list[Problem] = []
        glob_text = " ".join(self.globs) or "(none)"
        files = self.files()
        kept: list[str] = []
        for path in sorted(files):
            if _written_by_statefile(path) and not self.reaches_branch(path):
                if "/" in path and self.unchanged(path):
                    # An archive part on the branch already (path 1, a maintainer's record, the maintenance job
                    # wrote it there): the push skips it and the branch keeps it as it is; nothing of this run is
                    # lost.  A state file outside the glob stays an error: no record of it could ever be pushed.
                    kept.append(path)
                    continue
                found.append(Problem("error", f"{path} does not match repo-memory's file-glob ({glob_text}): its "
                                              "push skips it, so it never reaches the branch"))  # fmt: skip
        if kept:
            names = ", ".join(kept[:3]) + (f" (+{number_text(len(kept) - 3)} more)" if len(kept) > 3 else "")
            found.append(Problem("info", f"left on the branch as it has them (outside file-glob {glob_text}, "
                                         f"unchanged by this run): {plural(len(kept), 'file')}, {names}"))  # fmt: skip
        for program in programs:
            try:
                self.layout_for(program)
            except UsageError as exc:
                found.append(Problem("error", str(exc)))
        matched = {path: size for path, size in files.items() if self.reaches_branch(path)}
        for path, size in sorted(matched.items()):
            if size > self.max_file_size:
                found.append(Problem("error", f"{path} is {size_text(size)}, over repo-memory's max-file-size "
                                              f"({size_text(self.max_file_size)}): the whole push would be "
                                              "aborted"))  # fmt: skip
        if len(matched) > self.max_file_count:
            found.append(Problem("error", f"{plural(len(matched), 'file')} match file-glob, over repo-memory's "
                                          f"max-file-count ({number_text(self.max_file_count)}): the whole push would "
                                          "be aborted"))  # fmt: skip
        if self.has_baseline:
            added = self.pending_bytes()
            if added > self.patch_limit:
                found.append(Problem("error", f"this run adds {size_text(added)}, over repo-memory's patch limit "
                                              f"({size_text(self.patch_limit)} = 1.2 × max-patch-size "
                                              f"{number_text(self.max_patch_size)}): the whole push would be "
                                              "aborted"))  # fmt: skip
            elif added > self.max_patch_size:
                found.append(Problem("warning", f"this run adds {size_text(added)}, over max-patch-size "
                                                f"({size_text(self.max_patch_size)}) but within its limit of "
                                                f"{size_text(self.patch_limit)} (1.2 × max-patch-size)"))  # fmt: skip
        return found

    # -- what a write in this folder costs -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, str]:
        """The text of every matched file now (what a push would copy)."""
        return {path: (self.folder / path).read_bytes().decode("utf-8", "surrogateescape") for path in self.matched()}

    def write_cost(self, files: dict[str, str], snapshot: dict[str, str] | None = None) -> Cost:
        """The push's added bytes and matched-file count if ``files`` (path → new text) were written over
        ``snapshot`` (default: the folder now)."""
        current = self.snapshot() if snapshot is None else snapshot
        merged = {**current, **{path: text for path, text in files.items() if self.reaches_branch(path)}}
        added = sum(self._added_cached(path, text) for path, text in merged.items()) if self.has_baseline else 0
        return Cost(added, len(merged))

    def _added_cached(self, path: str, text: str) -> int:
        key = (path, text)
        if key not in self._costs:
            self._costs[key] = self.added_bytes(path, text)
        return self._costs[key]


@dataclass(frozen=True)
class Cost:
    """What a push of the folder would add (bytes, by the job's formula) and how many files it would match."""

    added: int
    files: int


def _written_by_statefile(path: str) -> bool:
    """State files, ``_shared.md`` and archive parts in any layout: the files statefile itself writes."""
    parts = path.split("/")
    if len(parts) == 1:
        name = parts[0]
        if name == f"{SHARED_PROGRAM}.md" or (name.endswith(".md") and is_program_name(name[:-3])):
            return True
        if name.startswith(ROOT_ARCHIVE_PREFIX):
            return part_number(name.rsplit(".", 2)[-2] + ".md") is not None if name.count(".") >= 3 else False
        return False
    if parts[0] != "archive":
        return False
    if len(parts) == 3:
        return is_program_name(parts[1]) and part_number(parts[2]) is not None
    if len(parts) == 2 and parts[1].count(".") >= 2:
        return part_number(parts[1].rsplit(".", 2)[-2] + ".md") is not None
    return False


__all__ = ["Cost", "Problem", "RepoMemoryFolder"]
