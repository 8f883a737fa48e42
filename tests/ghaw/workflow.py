"""One scheduled Autoloop run on gh-aw, put together from the re-stated jobs, with a simulated agent.

A :class:`World` is a repository (a bare ``origin`` with ``main`` holding ``.autoloop/programs`` and
``.github/workflows/autoloop.md``).  A :class:`Run` goes through the phases of a real run:

1. **pre-steps** (agent job, before the agent): Autoloop's scheduler clone and scheduler; then, on the lossless
   path, the shipped component's ``pre-agent-steps`` (statefile ``report``, ``check``, ``prepare``, and the upload
   of the run context as the ``statefile-context`` artifact); on the drop-in path, the steps workflows/README.md
   gives for it and gh-aw's own clone of the memory branch for the agent;
2. **the agent**: read-only — its checkout is made read-only and it gets no token.  On the lossless path it only
   calls the ``record_iteration`` tool (one JSONL line per call); on the drop-in path it runs ``statefile
   --repo-memory record`` in the repo-memory folder, then the guide's post-steps (``compact --all``, ``check``)
   run.  A hostile test makes it do more between :meth:`Run.agent` and :meth:`Run.after_agent`: every file on
   the agent job's runner is its to rewrite;
3. **after the agent** (lossless path): in the agent job, ingestion into ``agent_output.json`` and gh-aw's
   "Upload agent artifacts" step (:data:`UPLOAD_AGENT_ARTIFACTS`, from Autoloop's compiled lock file); then the
   custom safe-output job as the compiler lays it out (:func:`compiled_safe_job`: gh-aw's download of the
   ``agent`` artifact into ``$RUNNER_TEMP/gh-aw/safe-jobs/``, then the component's steps, each with
   ``GH_AW_AGENT_OUTPUT``), on a fresh runner — its own ``RUNNER_TEMP``, an empty workspace, nothing of the
   agent job's files but the run's artifacts (:class:`~ghaw.component.ArtifactStore`).  Drop-in path: the
   artifact of the memory folder and repo-memory's push job.

Every run keeps its own ``/tmp/gh-aw`` and one ``RUNNER_TEMP`` per job (folders of the test); the shipped and
documented scripts and gh-aw's artifact paths have ``/tmp/gh-aw`` rewritten to it, which is the only change made
to them, and ``STATEFILE_REPO_MEMORY_DIR`` moves the folder ``--repo-memory`` derives from the frontmatter
(``/tmp/gh-aw/repo-memory/default``) there too.  Every git command runs under a time limit.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ghaw import clone, push_job, safe_outputs, scheduler
from ghaw.component import (
    TIMEOUT,
    ArtifactStore,
    StepRun,
    bin_dir,
    documented_frontmatter,
    job_config,
    load_component,
    run_steps,
)

BRANCH = "memory/autoloop"
GH_AW = "/tmp/gh-aw"
#: The heading of workflows/README.md whose frontmatter excerpt the drop-in path runs (its steps and post-steps).
DROP_IN_GUIDE = "## Path 2: the drop-in path (repo-memory kept)"
JOB_ID = "record-iteration"
#: The agent job's "Upload agent artifacts" step, after ingestion (githubnext/autoloop
#: ``.github/workflows/autoloop.lock.yml``): the agent's own folder among gh-aw's files, common root /tmp/gh-aw.
UPLOAD_AGENT_ARTIFACTS: dict[str, Any] = {
    "name": "Upload agent artifacts",
    "if": "always()",
    "continue-on-error": True,
    "uses": "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f",
    "with": {
        "name": "agent",
        "path": """/tmp/gh-aw/aw-prompts/prompt.txt
/tmp/gh-aw/sandbox/agent/logs/
/tmp/gh-aw/redacted-urls.log
/tmp/gh-aw/mcp-logs/
/tmp/gh-aw/agent-stdio.log
/tmp/gh-aw/agent/
/tmp/gh-aw/safeoutputs.jsonl
/tmp/gh-aw/agent_output.json
/tmp/gh-aw/aw-*.patch
/tmp/gh-aw/aw-*.bundle
""",
        "if-no-files-found": "ignore",
    },
}
#: Where the compiler has a custom safe-output job download the agent artifact (``SafeJobsDownloadDirExpr``).
SAFE_JOBS_DIR = "${{ runner.temp }}/gh-aw/safe-jobs/"


def compiled_safe_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps gh-aw's compiler writes for a custom safe-output job (``buildSafeJobs`` in ``safe_jobs.go``): a
    download of the ``agent`` artifact (``continue-on-error: true``), then the job's own steps in order, each
    given ``GH_AW_AGENT_OUTPUT`` unless it sets it itself."""
    download = {"name": "Download agent output artifact", "continue-on-error": True,
                "uses": "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c",
                "with": {"name": "agent", "path": SAFE_JOBS_DIR}}  # fmt: skip
    output = {"GH_AW_AGENT_OUTPUT": f"{SAFE_JOBS_DIR}agent_output.json"}
    return [download, *({**step, "env": {**output, **(step.get("env") or {})}} for step in job["steps"])]


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=TIMEOUT)
    if done.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


@dataclass
class Report:
    """What the simulated agent reported for one iteration (the tool's arguments)."""

    run: str
    program: str
    arguments: dict[str, Any]


@dataclass
class World:
    """The repository and its programs, shared by every run."""

    root: Path
    path: str  # "lossless" or "drop-in"
    workflow_frontmatter: str
    programs: dict[str, str]
    seed: int = 0
    #: Where the ``statefile`` the scripts call lives (the checkout's console script, or a fork server's shim).
    bin_dir: Path = field(default_factory=bin_dir)
    url: str = ""
    origin: Path = field(default_factory=Path)
    reports: list[Report] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)
    runs: int = 0
    best: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        # Where GITHUB_SERVER_URL/GITHUB_REPOSITORY point ("$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git").
        self.origin = self.root / "server" / "owner" / "repo.git"
        self.origin.parent.mkdir(parents=True)
        self.url = self.origin.as_uri()
        git("init", "--quiet", "--bare", "--initial-branch=main", str(self.origin), cwd=self.root)
        seed = self.root / "seed"
        git("init", "--quiet", "--initial-branch=main", str(seed), cwd=self.root)
        (seed / ".github" / "workflows").mkdir(parents=True)
        (seed / ".github" / "workflows" / "autoloop.md").write_text(self.workflow_frontmatter)
        for name, text in self.programs.items():
            folder = seed / ".autoloop" / "programs" / name
            folder.mkdir(parents=True)
            (folder / "program.md").write_text(text)
        git("add", "-A", cwd=seed)
        git("commit", "--quiet", "-m", "programs", cwd=seed)
        git("push", "--quiet", self.url, "main", cwd=seed)
        # The agent job's checkout of main: the same for every run (main does not change), so cloned once.
        git("clone", "--quiet", self.url, str(self.workspace), cwd=self.root)

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def seed_memory(self, files: dict[str, str]) -> None:
        """Put ``files`` on the memory branch (a maintainer's push), e.g. an existing long state file."""
        work = self.root / "seed-memory"
        git("init", "--quiet", str(work), cwd=self.root)
        git("checkout", "--quiet", "--orphan", BRANCH, cwd=work)
        for name, text in files.items():
            (work / name).write_text(text)
        git("add", "-A", cwd=work)
        git("commit", "--quiet", "-m", "seed memory", cwd=work)
        git("push", "--quiet", self.url, f"{BRANCH}:{BRANCH}", cwd=work)

    def branch_file(self, path: str) -> str | None:
        done = subprocess.run(["git", "show", f"{BRANCH}:{path}"], cwd=self.origin, capture_output=True, check=False,
                              timeout=TIMEOUT)  # fmt: skip
        return done.stdout.decode("utf-8") if done.returncode == 0 else None

    def branch_files(self) -> dict[str, str]:
        return {path: data.decode("utf-8") for path, data in self.branch_blobs().items()}

    def branch_blobs(self, rev: str = BRANCH) -> dict[str, bytes]:
        """Every file of ``rev``'s tree on the remote, as bytes (one ``git cat-file --batch``); {} when no such rev."""
        listed = subprocess.run(["git", "ls-tree", "-r", "-z", rev], cwd=self.origin, capture_output=True,
                                check=False, timeout=TIMEOUT)  # fmt: skip
        if listed.returncode:
            return {}
        entries = [e.decode("utf-8").split("\t", 1) for e in listed.stdout.split(b"\0") if e]
        blobs = [(path, meta.split()[2]) for meta, path in entries if meta.split()[1] == "blob"]
        batch = subprocess.run(["git", "cat-file", "--batch"], cwd=self.origin, capture_output=True, check=True,
                               input="".join(f"{sha}\n" for _, sha in blobs).encode(), timeout=TIMEOUT)  # fmt: skip
        out, data = {}, batch.stdout
        for path, _ in blobs:
            header, data = data.split(b"\n", 1)
            size = int(header.split()[2])
            out[path], data = data[:size], data[size + 1 :]
        return out

    def tip(self) -> str | None:
        """The commit the remote's memory branch points to (None before the first write)."""
        done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}"], cwd=self.origin,
                              capture_output=True, text=True, check=False, timeout=TIMEOUT)  # fmt: skip
        return done.stdout.strip() or None

    def new_run(self, forced: str | None = None) -> Run:
        """A scheduled run, or with ``forced`` a manual dispatch naming a program (``AUTOLOOP_PROGRAM``)."""
        self.runs += 1
        return Run(self, f"{1000 + self.runs}", forced)


@dataclass
class Run:
    """One workflow run (see the module docstring)."""

    world: World
    run_id: str
    forced: str | None = None
    selected: str | None = None
    autoloop: dict[str, Any] = field(default_factory=dict)
    report: Report | None = None
    job_stdout: str = ""
    job_stderr: str = ""
    job_returncode: int | None = None
    job_steps: list[StepRun] = field(default_factory=list)
    output: dict[str, Any] | None = None
    push: push_job.PushResult | None = None
    log: list[str] = field(default_factory=list)

    @property
    def base(self) -> Path:
        return self.world.root / f"run-{self.run_id}"

    @property
    def gh_aw(self) -> Path:
        return self.base / "gh-aw"

    @property
    def workspace(self) -> Path:
        return self.world.workspace

    @property
    def artifacts(self) -> ArtifactStore:
        """The run's artifacts (shared by its jobs and their re-runs)."""
        return ArtifactStore(self.base / "artifacts")

    @property
    def agent_temp(self) -> Path:
        """``RUNNER_TEMP`` of the agent job's runner (the pre-agent steps and the agent run there)."""
        return self.base / "runner-temp-agent"

    def job_temp(self, attempt: int = 1) -> Path:
        """``RUNNER_TEMP`` of the safe-output job's runner, a fresh machine for every attempt."""
        return self.base / f"runner-temp-job-{attempt}"

    def contexts(self, temp: Path | None = None) -> dict[str, str]:
        """The expressions a step of this run may use; ``temp`` is its job's runner temp (the agent job's by
        default)."""
        return {"github.token": "", "github.server_url": self.server_url, "github.repository": "owner/repo",
                "github.run_id": self.run_id, "runner.temp": str(temp or self.agent_temp)}  # fmt: skip

    @property
    def server_url(self) -> str:
        return (self.world.root / "server").as_uri()

    def env(self, temp: Path | None = None, attempt: int = 1) -> dict[str, str]:
        """The default variables of every step (GITHUB_SERVER_URL/GITHUB_REPOSITORY point at the test's origin);
        ``temp`` is the job's runner temp (the agent job's by default), created here as a runner has it."""
        temp = temp or self.agent_temp
        temp.mkdir(parents=True, exist_ok=True)
        return {
            "GITHUB_SERVER_URL": self.server_url,
            "GITHUB_REPOSITORY": "owner/repo",
            "GITHUB_RUN_ID": self.run_id,
            "GITHUB_RUN_ATTEMPT": str(attempt),
            "GITHUB_ACTIONS": "true",
            "RUNNER_TEMP": str(temp),
            "STATEFILE_REPO_MEMORY_DIR": str(self.gh_aw / "repo-memory" / "default"),
        }

    # -- 1. pre-steps --------------------------------------------------------------------------------------------

    def pre_steps(self) -> bool:
        """Checkout, scheduler clone, scheduler, then the path's own pre-agent work; False when nothing is due."""
        self.base.mkdir(parents=True)
        memory = self.gh_aw / "repo-memory" / "autoloop"
        clone.scheduler_clone(self.world.url, BRANCH, memory)
        # The real clock: statefile stamps Last Run with the time it records, as in a real run.
        code, self.autoloop = scheduler.run_scheduler(
            self.workspace, memory, self.gh_aw / "autoloop.json", now=datetime.now(timezone.utc), forced=self.forced
        )
        self.selected = self.autoloop.get("selected")
        if code != 0 or not self.selected:
            return False
        if self.world.path == "lossless":
            frontmatter, _ = load_component()
            self._steps(frontmatter["pre-agent-steps"], "pre-agent step")
        else:
            # The guide's own `steps:` (after Autoloop's two), then gh-aw's clone of the memory for the agent.
            self._steps(documented_frontmatter(DROP_IN_GUIDE)["steps"], "step")
            clone.repo_memory_clone(self.world.url, BRANCH, self.gh_aw / "repo-memory" / "default")
        return True

    def _steps(self, steps: list[dict[str, Any]], what: str) -> None:
        """Run shipped or documented steps in the agent job (its checkout as the working directory); all must pass."""
        runs = run_steps(steps, env=self.env(), contexts=self.contexts(), cwd=self.workspace,
                         bin_dir=self.world.bin_dir, path_map={GH_AW: str(self.gh_aw)},
                         artifacts=self.artifacts)  # fmt: skip
        for step in runs:
            self.log.append(f"{step.name}: {step.returncode}\n{step.stdout}{step.stderr}")
            assert step.returncode == 0, f"{what} {step.name} failed: {step.stdout}{step.stderr}"

    # -- 2. the agent ----------------------------------------------------------------------------------------------

    def agent(
        self,
        outcome: dict[str, Any] | None = None,
        *,
        program: str | None = None,
        more: list[dict[str, Any]] | None = None,
    ) -> Report | None:
        """The simulated agent: one iteration of the selected program, reported the path's way.

        ``program`` is the name the agent reports (lossless path), when it is not the selected one: a typo or a
        hostile report.  ``more`` are further ``record_iteration`` calls after the first (their arguments whole,
        ``program`` included).  The :class:`Report` is the first call's."""
        assert self.selected
        arguments = outcome if outcome is not None else self._iteration(self.selected)
        reported = program or self.selected
        self.report = Report(self.run_id, reported, arguments)
        _read_only(self.workspace, True)
        try:
            if self.world.path == "lossless":
                memory = (self.gh_aw / "agent" / "statefile" / "memory.md").read_text()
                assert self.selected in memory, "the agent's memory view is not about the selected program"
                jsonl = self.gh_aw / "safeoutputs.jsonl"
                safe_outputs.call_tool(jsonl, "record_iteration", {"program": reported, **arguments})
                for call in more or []:
                    safe_outputs.call_tool(jsonl, "record_iteration", call)
            else:
                self._record_in_folder(arguments)
        finally:
            _read_only(self.workspace, False)
        self.world.reports.append(self.report)
        return self.report

    def _iteration(self, program: str) -> dict[str, Any]:
        """A plausible iteration: mostly accepted/rejected, sometimes an error; strings as gh-aw delivers them."""
        rng = self.world.rng
        direction = self.autoloop.get("selected_metric_direction") or "higher"
        best = self.world.best.get(program, 100.0)
        roll = rng.random()
        filler = " ".join(rng.choice(("cache", "tokenizer", "arena", "batch", "index", "merge", "sort", "scan"))
                          for _ in range(rng.randint(20, 45)))  # fmt: skip
        notes = (f"@octocat suggested this <!-- hidden --> see http://example.com/run/{self.run_id} and "
                 f"https://github.com/owner/repo/issues/{rng.randint(1, 99)}; {filler}")  # fmt: skip
        if roll < 0.04:
            signature = f"TS2339:fromArrays:tests/{filler.split()[0]}.test.ts"
            return {"status": "ci-fix-exhausted", "change": f"Try {filler[:40]}", "ci_fix_attempts": "5",
                    "pause_reason": f"ci-fix-exhausted: {signature}", "notes": f"CI stayed red: {notes}"}  # fmt: skip
        if roll < 0.12:
            return {"status": "error", "change": f"Try {filler[:40]}", "notes": f"build failed: {notes}"}
        step = round(rng.uniform(0.5, 3.0), 2)
        better = best - step if direction == "lower" else best + step
        worse = best + step if direction == "lower" else best - step
        if roll < 0.6:
            self.world.best[program] = better
            return {"status": "accepted", "metric": f"{better:.2f}", "change": f"Improve {filler[:50]}",
                    "notes": notes, "commit": f"{rng.getrandbits(28):07x}", "pr": "#7",
                    "lessons": f"Measure twice ({self.run_id})\nKeep {filler[:30]} small"}  # fmt: skip
        return {"status": "rejected", "metric": f"{worse:.2f}", "change": f"Attempt {filler[:50]}", "notes": notes,
                "future_directions": f"Revisit {filler[:30]}"}  # fmt: skip

    def _record_in_folder(self, arguments: dict[str, Any]) -> None:
        """Drop-in path: the agent records into gh-aw's repo-memory folder with statefile (no remote, no token)."""
        args = ["--repo-memory", "record", self.selected or "", "--status", arguments["status"],
                "--autoloop-json", str(self.gh_aw / "autoloop.json"),
                "--run-url", f"https://github.com/owner/repo/actions/runs/{self.run_id}"]  # fmt: skip
        for key, flag in (("metric", "--metric"), ("change", "--change"), ("notes", "--notes"), ("commit", "--commit")):
            if key in arguments:
                args += [flag, str(arguments[key])]
        if "pr" in arguments:
            args += ["--pr", str(arguments["pr"]).lstrip("#")]
        if arguments.get("lessons"):
            args += ["--lesson", str(arguments["lessons"]).splitlines()[0]]
        self._statefile(args)

    def _statefile(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **self.env()}
        env.pop("GITHUB_TOKEN", None)
        env.pop("GH_TOKEN", None)
        done = subprocess.run([str(self.world.bin_dir / "statefile"), *args], cwd=self.workspace, env=env,
                              capture_output=True, text=True, check=False, timeout=TIMEOUT)  # fmt: skip
        self.log.append(f"statefile {' '.join(args[:3])}: {done.returncode}\n{done.stdout}{done.stderr}")
        if done.returncode:
            raise AssertionError(f"statefile {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done

    # -- 3. after the agent ---------------------------------------------------------------------------------------

    def post_steps(self) -> None:
        """Drop-in path only: the guide's `post-steps:`, in the agent job (before the artifact upload)."""
        if self.world.path == "drop-in":
            self._steps(documented_frontmatter(DROP_IN_GUIDE)["post-steps"], "post-step")

    def after_agent(self, *, max_items: int | None = None) -> dict[str, Any]:
        """Lossless path, the agent job after the agent: "Ingest agent output" (the component's job config; with
        ``max_items`` gh-aw's cap on ``record_iteration`` items as if the job said so), then "Upload agent
        artifacts".  Returns the agent output."""
        frontmatter, _ = load_component()
        config = job_config(frontmatter)
        if max_items is not None:
            config[JOB_ID] = {**config[JOB_ID], "max": max_items}
        self.output = safe_outputs.ingest(self.gh_aw / "safeoutputs.jsonl", self.gh_aw / "agent_output.json", config)
        self._steps([UPLOAD_AGENT_ARTIFACTS], "agent job step")
        return self.output

    def safe_output_job(self, attempt: int = 1) -> None:
        """Lossless path: the custom job as compiled (:func:`compiled_safe_job`) on a fresh runner, with the run's
        artifacts; the agent job's :meth:`after_agent` first, when it has not run yet.

        ``attempt`` > 1 is "Re-run failed jobs" on this job alone: the run's attempt number goes up, the agent
        job and its artifacts stay those of attempt 1, and the job, on a new runner, downloads them again."""
        if self.output is None:
            self.after_agent()
        assert self.output is not None
        frontmatter, _ = load_component()
        job = frontmatter["safe-outputs"]["jobs"][JOB_ID]
        # The job's `if`: contains(needs.agent.outputs.output_types, 'record_iteration').
        if "record_iteration" not in {item["type"] for item in self.output["items"]}:
            return
        empty = self.base / f"job-workspace-{attempt}"  # a custom safe-output job has no checkout
        empty.mkdir()
        temp = self.job_temp(attempt)
        runs = run_steps(compiled_safe_job(job), env=self.env(temp, attempt), contexts=self.contexts(temp), cwd=empty,
                         bin_dir=self.world.bin_dir, path_map={}, artifacts=self.artifacts)  # fmt: skip
        self.job_steps = runs
        self.job_returncode = next((r.returncode for r in runs if r.returncode and not r.tolerated), 0)
        self.job_stdout = "".join(r.stdout for r in runs)
        self.job_stderr = "".join(r.stderr for r in runs)

    def push_repo_memory(self, *, file_glob: str, max_file_size: int, max_patch_size: int) -> push_job.PushResult:
        """Drop-in path: the agent job's artifact upload, then repo-memory's push job."""
        artifact = self.base / "artifact-repo-memory-default"
        push_job.artifact_of(self.gh_aw / "repo-memory" / "default", artifact)
        self.push = push_job.push_repo_memory(
            artifact, url=self.world.url, branch=BRANCH, workspace=self.base / "push-workspace", run_id=self.run_id,
            file_glob=file_glob, max_file_size=max_file_size, max_patch_size=max_patch_size,
        )  # fmt: skip
        return self.push

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def _read_only(folder: Path, on: bool) -> None:
    """Make the agent's checkout read-only (and writable again afterwards)."""
    for top, dirs, names in os.walk(folder):
        for name in [*dirs, *names]:
            path = Path(top, name)
            if path.is_symlink():
                continue
            mode = path.stat().st_mode
            path.chmod(mode & ~0o222 if on else mode | stat.S_IWUSR)
    mode = folder.stat().st_mode
    folder.chmod(mode & ~0o222 if on else mode | stat.S_IWUSR)


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data))


__all__ = ["BRANCH", "Report", "Run", "World", "git"]
