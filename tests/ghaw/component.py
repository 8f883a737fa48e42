"""Loading a shipped gh-aw component and running its steps the way a runner would.

GitHub Actions evaluates ``${{ … }}`` in ``env:``, ``with:`` and ``run:`` before a step runs and gives every step
the default variables (``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_RUN_ID``, ``GITHUB_RUN_ATTEMPT``,
``RUNNER_TEMP``, …); gh-aw adds ``GH_AW_AGENT_OUTPUT`` to each step of a custom safe-output job
(``safe_jobs.go``).  :func:`run_steps` does that with a small, strict expression table (an unknown expression fails
the test: the caller gives ``runner.temp`` and the ``github.*`` values its job has), runs each ``run:`` script with
``bash -e`` as the runner's default shell for ``run`` does, under a time limit, and skips the step whose ``id`` is
``install-statefile`` (it installs from the network; the tests use the checkout's ``statefile`` on ``PATH``
instead, and check that step's command line separately).

Of the ``uses:`` steps, the two artifact actions run against an :class:`ArtifactStore`, the run's artifacts (the
trust boundary of the lossless path rests on them); every other action is skipped.  The store re-states
actions/upload-artifact v4+ and actions/download-artifact v4+ (both read from their READMEs and
``@actions/artifact``'s documented behaviour, not copied):

- **upload** (``name``, ``path``, ``if-no-files-found``, ``include-hidden-files``, ``overwrite``): ``path`` is one
  or more lines, each a file, a folder (all files below it) or a glob, ``!`` lines excluding; relative lines are
  resolved against the workspace.  The files are *copied at the time the step runs* (a later change of the local
  file changes nothing uploaded).  Files and folders whose name starts with ``.`` are left out unless
  ``include-hidden-files: true``; symbolic links are followed.  The artifact's root is the least common ancestor
  of the lines' search paths (the part of a line before its first glob segment); one line naming one file keeps
  just the file's name.  No file: ``error`` fails the step, ``warn`` (the default) warns, ``ignore`` says
  nothing; no artifact is made either way.  An artifact is immutable: a second upload of the same name in the
  same run attempt fails (409 Conflict) unless ``overwrite: true``; a later attempt (a re-run) may upload it again.
- **download** (``name``, ``path``): the named artifact's files are extracted into ``path`` (the workspace when
  omitted), overwriting files of the same name; the newest upload of that name at or before the job's attempt
  (a re-run job still finds what attempt 1 uploaded); an unknown name fails the step.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

COMPONENT = Path(__file__).resolve().parents[2] / "workflows" / "shared" / "statefile.md"
INSTALL_STEP_ID = "install-statefile"
#: Seconds any step (and any git command of the re-statements) may take before the test fails it.
TIMEOUT = 180
UPLOAD_ACTION = "actions/upload-artifact"
DOWNLOAD_ACTION = "actions/download-artifact"
_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def load_component(path: Path = COMPONENT) -> tuple[dict[str, Any], str]:
    """The component's frontmatter (YAML) and its markdown body (the prompt fragment).  The file is read every
    time; its YAML is parsed once per text (a run loads it three times), and each caller gets its own copy."""
    data, body = _parse_component(path.read_text(encoding="utf-8"), str(path))
    return copy.deepcopy(data), body


@functools.lru_cache(maxsize=8)
def _parse_component(text: str, where: str) -> tuple[dict[str, Any], str]:
    match = re.match(r"^---\n(.*?)\n---\n(.*)\Z", text, re.S)
    assert match, f"{where} has no frontmatter"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict)
    return data, match.group(2)


@dataclass
class StepRun:
    """One step that ran: its name, exit code and output; ``tolerated`` when its failure does not fail the job
    (``continue-on-error: true``)."""

    name: str
    returncode: int
    stdout: str
    stderr: str
    tolerated: bool = False


def _evaluate(text: str, contexts: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression not in contexts:
            raise AssertionError(f"the test runner does not know the expression {expression!r}")
        return contexts[expression]

    return _EXPR.sub(one, text)


class ArtifactStore:
    """The artifacts of one workflow run: ``root/<name>/attempt-<n>/<files>`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _uploads(self, name: str) -> dict[int, Path]:
        folder = self.root / name
        found = {}
        if folder.is_dir():
            for entry in folder.iterdir():
                match = re.fullmatch(r"attempt-(\d+)", entry.name)
                if match:
                    found[int(match.group(1))] = entry
        return found

    def files(self, name: str, attempt: int | None = None) -> dict[str, bytes]:
        """The files of the newest upload of ``name`` (at or before ``attempt``): relative path → bytes."""
        folder = self.latest(name, attempt)
        if folder is None:
            return {}
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    def latest(self, name: str, attempt: int | None = None) -> Path | None:
        uploads = {n: p for n, p in self._uploads(name).items() if attempt is None or n <= attempt}
        return uploads[max(uploads)] if uploads else None

    def upload(self, inputs: dict[str, str], *, cwd: Path, attempt: int) -> tuple[int, str]:
        """actions/upload-artifact with ``inputs`` (already evaluated): (exit code, log)."""
        name = inputs.get("name") or "artifact"
        if_none = (inputs.get("if-no-files-found") or "warn").lower()
        hidden = str(inputs.get("include-hidden-files", "false")).lower() == "true"
        overwrite = str(inputs.get("overwrite", "false")).lower() == "true"
        lines = [line.strip() for line in str(inputs.get("path", "")).splitlines() if line.strip()]
        includes = [_absolute(line, cwd) for line in lines if not line.startswith("!")]
        excludes = [_absolute(line[1:].strip(), cwd) for line in lines if line.startswith("!")]
        if not includes:
            return 1, "Input required and not supplied: path"
        roots = [_search_path(pattern) for pattern in includes]
        found: dict[Path, Path] = {}  # file → the search path it was found under
        for pattern, root in zip(includes, roots, strict=True):
            for match in glob.glob(pattern, recursive=True) if _is_glob(pattern) else [pattern]:
                path = Path(match)
                below = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
                for file in below:
                    rel = file.relative_to(root) if file != root else Path(file.name)
                    if not hidden and any(part.startswith(".") for part in rel.parts):
                        continue
                    if any(fnmatch.fnmatch(str(file), ex) or str(file).startswith(ex.rstrip("/") + "/")
                           for ex in excludes):  # fmt: skip
                        continue
                    found.setdefault(file, root)
        if not found:
            message = (
                f"No files were found with the provided path: {chr(10).join(lines)}. No artifacts will be uploaded."
            )
            if if_none == "error":
                return 1, f"::error::{message}"
            return 0, ("" if if_none == "ignore" else f"::warning::{message}")
        if len(roots) > 1:
            base = Path(os.path.commonpath([str(r) for r in roots]))
        elif roots[0].is_file():
            base = roots[0].parent
        else:
            base = roots[0]
        target = self.root / name / f"attempt-{attempt}"
        if target.exists():
            if not overwrite:
                return 1, ("::error::Failed to CreateArtifact: Received non-retryable error: Failed request: (409) "
                           "Conflict: an artifact with this name already exists on the workflow run")  # fmt: skip
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for file in sorted(found):
            dest = target / file.relative_to(base)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, dest)  # follows a symbolic link, as the action does
        return 0, f"Artifact {name} has been successfully uploaded! ({len(found)} file(s))"

    def download(self, inputs: dict[str, str], *, cwd: Path, attempt: int) -> tuple[int, str]:
        """actions/download-artifact of one artifact by ``name`` into ``path``: (exit code, log)."""
        name = inputs.get("name")
        if not name:
            return 1, "the test runner downloads artifacts by name only"
        source = self.latest(name, attempt)
        if source is None:
            return 1, f"::error::Unable to download artifact(s): Artifact not found for name: {name}"
        dest = _absolute(str(inputs.get("path") or cwd), cwd)
        count = 0
        for file in sorted(source.rglob("*")):
            if file.is_file():
                out = Path(dest) / file.relative_to(source)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(file, out)
                count += 1
        return 0, f"Artifact download completed successfully: {name} ({count} file(s)) to {dest}"


def _absolute(line: str, cwd: Path) -> str:
    path = os.path.expanduser(line)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


def _search_path(pattern: str) -> Path:
    """The part of a pattern before its first segment with a glob character (``@actions/glob``'s search path)."""
    parts = Path(pattern).parts
    for index, part in enumerate(parts):
        if _is_glob(part):
            return Path(*parts[:index])
    return Path(pattern)


def action_of(step: dict[str, Any]) -> str | None:
    """``owner/name`` of a ``uses:`` step (``actions/upload-artifact@<sha> # v7`` → ``actions/upload-artifact``)."""
    uses = step.get("uses")
    return str(uses).split("@", 1)[0].strip() if uses else None


def run_steps(
    steps: list[dict[str, Any]],
    *,
    env: dict[str, str],
    contexts: dict[str, str],
    cwd: Path,
    bin_dir: Path,
    path_map: dict[str, str] | None = None,
    artifacts: ArtifactStore | None = None,
) -> list[StepRun]:
    """Run ``steps`` in order; after a failing one, only the steps with ``if: always()`` run (as in a job), and
    a step with ``continue-on-error: true`` never fails the job.  ``bin_dir`` goes first on PATH.

    ``path_map`` rewrites fixed runner paths in scripts and action inputs (``/tmp/gh-aw`` → this run's folder): the
    one change made to a shipped step, so that runs of a test (and tests running at once) do not share
    ``/tmp/gh-aw``.  ``artifacts`` is the run's artifact store; a step using an artifact action without one fails
    the test.  The run attempt is ``env["GITHUB_RUN_ATTEMPT"]``.
    """
    runs: list[StepRun] = []
    failed = False
    attempt = int(env.get("GITHUB_RUN_ATTEMPT", "1"))

    def mapped(text: str) -> str:
        for old, new in (path_map or {}).items():
            text = text.replace(old, new)
        return text

    for step in steps:
        action = action_of(step)
        if step.get("id") == INSTALL_STEP_ID or (action is not None and action not in (UPLOAD_ACTION, DOWNLOAD_ACTION)):
            continue
        if failed and "always()" not in str(step.get("if", "")):
            continue
        name = str(step.get("name") or step.get("uses") or "run")
        if action is not None:
            if artifacts is None:
                raise AssertionError(f"step {name!r} uses {action}: give run_steps the run's ArtifactStore")
            inputs = {key: mapped(_evaluate(str(value), contexts)) for key, value in (step.get("with") or {}).items()}
            act = artifacts.upload if action == UPLOAD_ACTION else artifacts.download
            code, log = act(inputs, cwd=cwd, attempt=attempt)
            runs.append(StepRun(name, code, f"{log}\n" if code == 0 and log else "", f"{log}\n" if code else ""))
        else:
            step_env = {**os.environ, **env, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
            for key, value in (step.get("env") or {}).items():
                step_env[key] = _evaluate(str(value), contexts)
            script = mapped(_evaluate(step["run"], contexts))
            try:
                done = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=step_env, capture_output=True,
                                      text=True, check=False, timeout=TIMEOUT)  # fmt: skip
                runs.append(StepRun(name, done.returncode, done.stdout, done.stderr))
            except subprocess.TimeoutExpired as exc:
                runs.append(
                    StepRun(name, 124, _text(exc.stdout), f"{_text(exc.stderr)}step timed out after {TIMEOUT} s")
                )
        runs[-1].tolerated = str(step.get("continue-on-error", "false")).lower() == "true"
        failed = failed or (runs[-1].returncode != 0 and not runs[-1].tolerated)
    return runs


def _text(value: str | bytes | None) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else (value or "")


GUIDE = COMPONENT.parents[1] / "README.md"


def documented_frontmatter(heading: str, path: Path = GUIDE) -> dict[str, Any]:
    """The frontmatter excerpt the guide (``workflows/README.md``) gives under ``heading``: its first ``yaml`` block
    after that heading, parsed as the workflow's YAML (so a test runs the very steps a user copies)."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    match = re.search(r"^```yaml\n(.*?)^```", text[start:], re.M | re.S)
    assert match, f"{path}: no yaml block under {heading!r}"
    body = re.sub(r"^---\s*$", "", match.group(1), flags=re.M)
    data = yaml.safe_load(body)
    assert isinstance(data, dict)
    return data


def bin_dir() -> Path:
    """Where the checkout's ``statefile`` console script lives (the test's stand-in for the install step)."""
    return Path(sys.executable).parent


def job_config(frontmatter: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What gh-aw's compiler writes into the safe-outputs ``config.json`` for the component's custom jobs."""
    jobs = (frontmatter.get("safe-outputs") or {}).get("jobs") or {}
    return {job_id: {"inputs": job.get("inputs", {}), **({"max": job["max"]} if "max" in job else {})}
            for job_id, job in jobs.items()}  # fmt: skip
