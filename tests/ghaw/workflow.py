"""One scheduled Autoloop run on gh-aw, put together from the re-stated jobs, with a simulated agent.

A :class:`World` is a repository (a bare ``origin`` with ``main`` holding ``.autoloop/programs`` and
``.github/workflows/autoloop.md``).  A :class:`Run` goes through the phases of a real run:

1. **pre-steps** (agent job, before the agent): Autoloop's scheduler clone and scheduler; then, on the lossless
   path, the shipped component's ``pre-agent-steps`` (statefile ``report``, ``check``, ``prepare``); on the
   drop-in path, the steps workflows/README.md gives for it and gh-aw's own clone of the memory branch for the
   agent;
2. **the agent**: read-only — its checkout is made read-only and it gets no token.  On the lossless path it only
   calls the ``record_iteration`` tool (one JSONL line); on the drop-in path it runs ``statefile --repo-memory
   record`` in the repo-memory folder, then the guide's post-steps (``compact --all``, ``check``) run;
3. **after the agent**: ingestion into ``agent_output.json``; the custom safe-output job's steps from the shipped
   component, run with a real ``$GH_AW_AGENT_OUTPUT`` in a fresh job folder with no checkout (lossless path); or
   the artifact of the memory folder and repo-memory's push job (drop-in path).

Every run keeps its own ``/tmp/gh-aw`` (a folder of the test); the shipped and documented scripts have that
prefix rewritten to it, which is the only change made to them, and ``STATEFILE_REPO_MEMORY_DIR`` moves the folder
``--repo-memory`` derives from the frontmatter (``/tmp/gh-aw/repo-memory/default``) there too.
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
from ghaw.component import bin_dir, documented_frontmatter, job_config, load_component, run_steps

BRANCH = "memory/autoloop"
GH_AW = "/tmp/gh-aw"
#: The heading of workflows/README.md whose frontmatter excerpt the drop-in path runs (its steps and post-steps).
DROP_IN_GUIDE = "## Path 2: the drop-in path (repo-memory kept)"


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
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
        done = subprocess.run(["git", "show", f"{BRANCH}:{path}"], cwd=self.origin, capture_output=True, check=False)
        return done.stdout.decode("utf-8") if done.returncode == 0 else None

    def branch_files(self) -> dict[str, str]:
        done = subprocess.run(["git", "ls-tree", "-r", "--name-only", BRANCH], cwd=self.origin, capture_output=True,
                              text=True, check=False)  # fmt: skip
        return {p: self.branch_file(p) or "" for p in done.stdout.split()} if done.returncode == 0 else {}

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

    def contexts(self) -> dict[str, str]:
        return {"github.token": "", "github.server_url": self.server_url, "github.repository": "owner/repo",
                "github.run_id": self.run_id}  # fmt: skip

    @property
    def server_url(self) -> str:
        return (self.world.root / "server").as_uri()

    def env(self) -> dict[str, str]:
        """The default variables of every step (GITHUB_SERVER_URL/GITHUB_REPOSITORY point at the test's origin)."""
        return {
            "GITHUB_SERVER_URL": self.server_url,
            "GITHUB_REPOSITORY": "owner/repo",
            "GITHUB_RUN_ID": self.run_id,
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_ACTIONS": "true",
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
                         bin_dir=self.world.bin_dir, path_map={GH_AW: str(self.gh_aw)})  # fmt: skip
        for step in runs:
            self.log.append(f"{step.name}: {step.returncode}\n{step.stdout}{step.stderr}")
            assert step.returncode == 0, f"{what} {step.name} failed: {step.stdout}{step.stderr}"

    # -- 2. the agent ----------------------------------------------------------------------------------------------

    def agent(self, outcome: dict[str, Any] | None = None, *, program: str | None = None) -> Report | None:
        """The simulated agent: one iteration of the selected program, reported the path's way.

        ``program`` is the name the agent reports (lossless path), when it is not the selected one: a typo."""
        assert self.selected
        arguments = outcome if outcome is not None else self._iteration(self.selected)
        reported = program or self.selected
        self.report = Report(self.run_id, reported, arguments)
        _read_only(self.workspace, True)
        try:
            if self.world.path == "lossless":
                memory = (self.gh_aw / "agent" / "statefile" / "memory.md").read_text()
                assert self.selected in memory, "the agent's memory view is not about the selected program"
                safe_outputs.call_tool(self.gh_aw / "safeoutputs.jsonl", "record_iteration",
                                       {"program": reported, **arguments})  # fmt: skip
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
                              capture_output=True, text=True, check=False)  # fmt: skip
        self.log.append(f"statefile {' '.join(args[:3])}: {done.returncode}\n{done.stdout}{done.stderr}")
        if done.returncode:
            raise AssertionError(f"statefile {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done

    # -- 3. after the agent ---------------------------------------------------------------------------------------

    def post_steps(self) -> None:
        """Drop-in path only: the guide's `post-steps:`, in the agent job (before the artifact upload)."""
        if self.world.path == "drop-in":
            self._steps(documented_frontmatter(DROP_IN_GUIDE)["post-steps"], "post-step")

    def safe_output_job(self, attempt: int = 1) -> None:
        """Lossless path: ingestion, the agent artifact, and the custom job's steps with $GH_AW_AGENT_OUTPUT.

        ``attempt`` > 1 is "Re-run failed jobs" on this job alone: the run's attempt number goes up, the agent
        job and its artifact stay those of attempt 1, and the job downloads that artifact again."""
        frontmatter, _ = load_component()
        output = self.gh_aw / "agent_output.json"
        if attempt == 1:
            data = safe_outputs.ingest(self.gh_aw / "safeoutputs.jsonl", output, job_config(frontmatter))
        else:
            data = json.loads(output.read_text(encoding="utf-8"))
        job_dir = self.base / f"runner-temp-{attempt}" / "gh-aw" / "safe-jobs"
        # "Upload agent artifacts" (common root /tmp/gh-aw kept) → downloaded into the job's safe-jobs folder.
        job_dir.mkdir(parents=True)
        shutil.copyfile(output, job_dir / "agent_output.json")
        shutil.copytree(self.gh_aw / "agent", job_dir / "agent")
        types = {item["type"] for item in data["items"]}
        job = frontmatter["safe-outputs"]["jobs"]["record-iteration"]
        if "record_iteration" not in types:  # the job's `if`: contains(output_types, 'record_iteration')
            return
        empty = self.base / f"job-workspace-{attempt}"  # a custom safe-output job has no checkout
        empty.mkdir()
        env = {**self.env(), "GITHUB_RUN_ATTEMPT": str(attempt),
               "GH_AW_AGENT_OUTPUT": str(job_dir / "agent_output.json")}  # fmt: skip
        runs = run_steps(job["steps"], env=env, contexts=self.contexts(), cwd=empty, bin_dir=self.world.bin_dir,
                         path_map={})  # fmt: skip
        self.job_returncode = next((r.returncode for r in runs if r.returncode), 0)
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
