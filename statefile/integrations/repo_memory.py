"""gh-aw's repo-memory folder as its push job will see it: which files reach the branch, and what a push adds.

The ``push_repo_memory`` job copies the files matching ``file-glob`` over the branch, and refuses the whole push
when one exceeds ``max-file-size``, more than ``max-file-count`` match, or the lines it adds exceed
``floor(max-patch-size × 1.2)`` bytes (github/gh-aw-actions ``push_repo_memory.cjs`` v0.65.6 lines 224-429),
measured against the clone's ``HEAD``.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field
from functools import cached_property
from pathlib import Path

from statefile.defaults import SHARED_PROGRAM
from statefile.errors import GitError, UsageError
from statefile.integrations.ghaw import effective_patch_limit, glob_matches, patch_added_bytes
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
class Cost:
    """What a push of the folder would add (bytes, by the job's formula) and how many files it would match."""

    added: int
    files: int


@dataclass
class RepoMemoryFolder:
    """One repo-memory folder with its push limits (``globs`` empty = no file-glob filter)."""

    folder: Path
    _: KW_ONLY
    globs: tuple[str, ...]
    max_file_size: int
    max_patch_size: int
    max_file_count: int
    _baselines: dict[str, str | None] = field(default_factory=dict, repr=False)
    _costs: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    @property
    def patch_limit(self) -> int:
        """The added bytes at which the push job aborts."""
        return effective_patch_limit(self.max_patch_size)

    def reaches_branch(self, path: str) -> bool:
        """Whether the push job copies ``path`` (relative, ``/``-separated) to the branch."""
        # upload-artifact leaves out hidden paths (a segment starting with "."), before the glob is even applied.
        return not any(part.startswith(".") for part in path.split("/")) and glob_matches(path, self.globs)

    def layout_for(self, program: str) -> ArchiveLayout:
        """The first archive layout (``archive/{p}/``, ``archive/{p}.NNNN.md``, ``_archive.{p}.NNNN.md``) the glob
        lets through; UsageError when none does (compaction would silently lose what it folds away)."""
        for kind in LAYOUT_KINDS:
            layout = ArchiveLayout(kind)
            if all(self.reaches_branch(layout.part_path(program, name)) for name in ("0001.md", "0123.md")):
                return layout
        tried = ", ".join(ArchiveLayout(kind).part_path(program, "0001.md") for kind in LAYOUT_KINDS)
        raise UsageError(f"repo-memory's file-glob ({' '.join(self.globs)}) lets no archive file of '{program}' reach "
                         f"the branch (tried {tried}); nothing was written — add '*.md' (or 'archive/**') to "
                         "file-glob")  # fmt: skip

    def require_state_path(self, program: str) -> None:
        """UsageError when ``{program}.md`` itself would not reach the branch."""
        if not self.reaches_branch(f"{program}.md"):
            raise UsageError(f"repo-memory's file-glob ({' '.join(self.globs)}) does not let {program}.md reach the "
                             "branch; nothing was written — add '*.md' to file-glob")  # fmt: skip

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        env = {k: v for k, v in os.environ.items() if k not in _GIT_VARIABLES} | _PRISTINE
        try:
            return subprocess.run([git_executable(), *args], cwd=self.folder, env=env, capture_output=True, check=False)
        except OSError as exc:
            raise GitError(f"cannot run git in {self.folder} ({exc.strerror}); install git") from None

    @cached_property
    def has_baseline(self) -> bool:
        """Whether the folder is the top of a git clone (an unborn branch's baseline is the empty tree)."""
        top = self._git("rev-parse", "--show-toplevel") if (self.folder / ".git").exists() else None
        at_top = top is not None and Path(os.fsdecode(top.stdout.strip())).resolve() == self.folder.resolve()
        return top is not None and top.returncode == 0 and at_top

    def baseline(self, path: str) -> str | None:
        """The text of ``path`` at the clone's HEAD, ``None`` when it is not there (a new file)."""
        if path not in self._baselines:
            shown = self._git("cat-file", "blob", f"HEAD:{path}") if self.has_baseline else None
            ok = shown is not None and shown.returncode == 0
            self._baselines[path] = shown.stdout.decode("utf-8", "surrogateescape") if shown and ok else None
        return self._baselines[path]

    def unchanged(self, path: str) -> bool:
        """Whether ``path`` in the folder is exactly as the clone's HEAD has it."""
        old = self.baseline(path)
        try:
            return old is not None and (self.folder / path).read_bytes().decode("utf-8", "surrogateescape") == old
        except OSError:
            return False

    def added_bytes(self, path: str, new: str) -> int:
        """The bytes the push job would count for ``path`` changing from its baseline to ``new``: counted directly
        for a new file or one that only grew at its end (an archive part), else through ``git diff`` itself."""
        old = self.baseline(path) if self.has_baseline else None
        if old == new:
            return 0
        if not old or (new.startswith(old) and old.endswith("\n")):
            added = split_lines(new[len(old or "") :])
            return patch_added_bytes("\n".join("+" + line.rstrip("\r\n") for line in added))
        return patch_added_bytes(self._diff(old, new))

    def _diff(self, old: str, new: str) -> str:
        import tempfile  # here, not at the top: only a write that reshapes a file needs it

        with tempfile.TemporaryDirectory(prefix="statefile-patch-") as tmp:
            for name, text in (("a", old), ("b", new)):
                Path(tmp, name).write_bytes(text.encode("utf-8", "surrogateescape"))
            # --diff-algorithm=default: Myers, as the push job's `git diff --cached` on a fresh runner.
            proc = self._git("diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv",
                             "--diff-algorithm=default", "--", str(Path(tmp, "a")), str(Path(tmp, "b")))  # fmt: skip
        if proc.returncode not in (0, 1):
            raise GitError(redact(f"git diff failed in {self.folder}: {proc.stderr.decode('utf-8', 'replace')}"))
        return proc.stdout.decode("utf-8", "surrogateescape")

    def files(self) -> dict[str, int]:
        """Every regular file below the folder except ``.git``: relative path → size (what the job scans)."""
        found: dict[str, int] = {}
        for top, dirs, names in os.walk(self.folder):
            rel = Path(top).relative_to(self.folder)
            dirs[:] = sorted(d for d in dirs if not (rel == Path(".") and d == ".git"))
            for name in sorted(names):
                info = os.lstat(Path(top, name))
                if stat.S_ISREG(info.st_mode):
                    found[(rel / name).as_posix()] = info.st_size
        return found

    def problems(self, programs: Iterable[str]) -> dict[str, list[str]]:
        """What would make the push job drop a file statefile wrote, or abort the push, by severity: ``error`` (the
        push would fail or drop it), ``warning``, ``info`` (nothing this run must fix)."""
        found: dict[str, list[str]] = {"error": [], "warning": [], "info": []}
        glob_text = " ".join(self.globs) or "(none)"
        files = self.files()
        outside = sorted(p for p in files if _written_by_statefile(p) and not self.reaches_branch(p))
        # An archive part on the branch already: the push skips it and the branch keeps it; nothing of this run is
        # lost.  A state file outside the glob stays an error: no record of it could be pushed.
        kept = [path for path in outside if "/" in path and self.unchanged(path)]
        found["error"] += [f"{path} does not match repo-memory's file-glob ({glob_text}): its push skips it, so it "
                           "never reaches the branch" for path in outside if path not in kept]  # fmt: skip
        if kept:
            names = ", ".join(kept[:3]) + (f" (+{number_text(len(kept) - 3)} more)" if len(kept) > 3 else "")
            found["info"].append(f"left on the branch as it has them (outside file-glob {glob_text}, unchanged by "
                                 f"this run): {plural(len(kept), 'file')}, {names}")  # fmt: skip
        for program in programs:
            try:
                self.layout_for(program)
            except UsageError as exc:
                found["error"].append(str(exc))
        matched = {path: size for path, size in files.items() if self.reaches_branch(path)}
        found["error"] += [f"{path} is {size_text(size)}, over repo-memory's max-file-size "
                           f"({size_text(self.max_file_size)}): the whole push would be aborted"
                           for path, size in sorted(matched.items()) if size > self.max_file_size]  # fmt: skip
        if len(matched) > self.max_file_count:
            found["error"].append(f"{plural(len(matched), 'file')} match file-glob, over repo-memory's max-file-count "
                                  f"({number_text(self.max_file_count)}): the whole push would be aborted")  # fmt: skip
        added = self.write_cost({}).added
        if added > self.patch_limit:
            found["error"].append(f"this run adds {size_text(added)}, over repo-memory's patch limit "
                                  f"({size_text(self.patch_limit)} = 1.2 × max-patch-size "
                                  f"{number_text(self.max_patch_size)}): the whole push would be aborted")  # fmt: skip
        elif added > self.max_patch_size:
            found["warning"].append(f"this run adds {size_text(added)}, over max-patch-size "
                                    f"({size_text(self.max_patch_size)}) but within its limit of "
                                    f"{size_text(self.patch_limit)} (1.2 × max-patch-size)")  # fmt: skip
        return found

    def snapshot(self) -> dict[str, str]:
        """The text of every matched file now (what a push would copy)."""
        return {path: (self.folder / path).read_bytes().decode("utf-8", "surrogateescape")
                for path in self.files() if self.reaches_branch(path)}  # fmt: skip

    def write_cost(self, files: dict[str, str], snapshot: dict[str, str] | None = None) -> Cost:
        """The push's added bytes and matched-file count if ``files`` (path → new text) were written over
        ``snapshot`` (default: the folder now)."""
        current = self.snapshot() if snapshot is None else snapshot
        merged = {**current, **{path: text for path, text in files.items() if self.reaches_branch(path)}}
        if not self.has_baseline:
            return Cost(0, len(merged))
        for key in merged.items():
            if key not in self._costs:
                self._costs[key] = self.added_bytes(*key)
        return Cost(sum(self._costs[key] for key in merged.items()), len(merged))


def _written_by_statefile(path: str) -> bool:
    """State files, ``_shared.md`` and archive parts in any layout: the files statefile itself writes."""
    parts = path.split("/")
    name = parts[-1]
    if len(parts) == 1:
        if name == f"{SHARED_PROGRAM}.md" or (name.endswith(".md") and is_program_name(name[:-3])):
            return True
        return name.startswith(ROOT_ARCHIVE_PREFIX) and name.count(".") >= 3 and _numbered(name)
    if parts[0] != "archive" or len(parts) > 3:
        return False
    if len(parts) == 3:
        return is_program_name(parts[1]) and part_number(name) is not None
    return name.count(".") >= 2 and _numbered(name)


def _numbered(name: str) -> bool:
    return part_number(name.rsplit(".", 2)[-2] + ".md") is not None
