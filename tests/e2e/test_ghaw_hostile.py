"""The hostile-agent suite: every payload of tests/ghaw/payloads.py through ``statefile apply``, against a real remote.

The agent of a gh-aw run is untrusted; ``statefile apply`` is the privileged safe-output job that writes what it
reported.  Each payload is applied to a copy of one seeded bare remote (built once a module): ``victim`` (the
program the trusted context selected: Best Metric 10, Iteration Count 3, a maintainer's Current Priorities, a
maintainer's lessons, one of them pinned, an archive part), ``other`` (paused by its maintainer, with an archive),
``victim-old`` and the shared lessons.  After every payload, whatever it was:

- the job failed cleanly: never exit 70, no traceback, every stderr line one ``statefile: …`` message;
- every file but victim's is byte-identical, victim's archive only grew, and every file on the branch parses;
- victim's Machine State, read by the upstream scheduler's logic, changed only as one report may change it;
- victim's Current Priorities and every line a maintainer wrote are byte-identical;
- what landed is inert: no control, escape, bidi or surrogate character, no comment but statefile's own marker,
  no pin, no importance emphasis, no heading or table row of the agent's, every new bullet marked as the agent's.

Most payloads run in-process (the console script's own ``invoke``).  The number, size and list payloads run as
processes of their own with a time limit, so a hang fails its test instead of stalling the suite: the real console
entry point, forked from a server that imported statefile once (tests/ghaw/forkserver.py: the same argv, cwd,
environment and exit code, without a second of interpreter start-up each); a hung one is killed by its id.
``STATEFILE_E2E_PROCESSES=1`` runs them through the installed console script instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import pinned_identity
from ghaw.forkserver import ForkServer
from ghaw.payloads import (
    ALLOWED_STATUSES,
    CLASSES,
    CONTEXT,
    GOAL,
    HONEST,
    OWN_MARKER,
    PAYLOADS,
    SELECTED,
    Landed,
    Neutralized,
    Payload,
    Refused,
)
from gitutil import git
from upstream import upstream_machine_state

from statefile.cli import cli
from statefile.cli.run import invoke
from statefile.model.archive import make_chunk, part_header
from statefile.model.document import parse
from statefile.policy.compaction import is_important, is_pinned

BRANCH = "memory/autoloop"
#: A payload run as a process must finish within this (seconds); the slowest takes about one.
TIMEOUT = 20

# -- the seeded branch ----------------------------------------------------------------------------------------------

PRIORITIES = (
    "Maintainer (@alice, 2026-11-01): focus on the tokenizer. Do not touch the test suite, and never disable CI.\n"
)
MAINTAINER_LESSONS = (
    "- 📌 Never disable the test suite to make the metric pass (maintainer).\n",
    "- <!-- pin --> Keep the benchmark inputs fixed between iterations.\n",
    "- **Important**: measure three times and take the median.\n",
    "- Caching the parser tables helped (+3).\n",
)
MAINTAINER_FORECLOSED = ("- Rewriting the parser in Rust: the build cannot ship a binary.\n",)
MAINTAINER_FUTURE = ("- Try a table-driven tokenizer.\n",)


#: Markers of the reports the payloads' runs make, written into an old entry's notes by some other path (a hand edit,
#: an old folder-mode agent): not on a line of their own, so no report is taken for applied because of them.
FORGED_MARKERS = f"(copied: {OWN_MARKER} {OWN_MARKER.replace('attempt 1', 'attempt 2')})"


def victim_text() -> str:
    return f"""# Autoloop: victim

🤖 *This file is maintained by the Autoloop agent. Maintainers may freely edit any section.*

---

## ⚙️ Machine State

> 🤖 *Updated automatically after each iteration. The pre-step scheduler reads this table — keep it accurate.*

| Field | Value |
|-------|-------|
| Last Run | 2026-11-20T10:00:00Z |
| Iteration Count | 3 |
| Best Metric | 10 |
| Target Metric | 50 |
| Metric Direction | higher |
| Branch | `autoloop/victim` |
| PR | #7 |
| Issue | #3 |
| Paused | false |
| Pause Reason | — |
| Completed | false |
| Completed Reason | — |
| Consecutive Errors | 0 |
| Recent Statuses | accepted, rejected, accepted |

---

## 📋 Program Info

**Goal**: {GOAL}
**Metric**: score (higher is better)
**Branch**: [`autoloop/victim`](../../tree/autoloop/victim)
**Pull Request**: #7
**Issue**: #3

---

## 🎯 Current Priorities

<!-- Maintainers: add priorities here to steer the agent. The agent reads this before each iteration. -->

{PRIORITIES}
---

## 📚 Lessons Learned

Key findings and insights accumulated across iterations.

{"".join(MAINTAINER_LESSONS)}
---

## 🚧 Foreclosed Avenues

Approaches that have been conclusively ruled out, with reasons.

{"".join(MAINTAINER_FORECLOSED)}
---

## 🔭 Future Directions

Ideas for future iterations, from maintainers and the agent.

{"".join(MAINTAINER_FUTURE)}
---

## 📊 Iteration History

All iterations in reverse chronological order (newest first).

<!-- New entries are prepended below this line -->

### Iteration 3 — 2026-11-20 10:00 UTC — [Run](https://github.com/owner/repo/actions/runs/400)

- **Status**: ✅ Accepted
- **Change**: Cache the parser tables
- **Metric**: 10 (previous best: 7, delta: +3)
- **Commit**: 1a2b3c4
- **Notes**: Parsing is faster.
<!-- statefile-item: run 400 attempt 1 item 1 -->

### Iteration 2 — 2026-11-19 10:00 UTC — [Run](https://github.com/owner/repo/actions/runs/300)

- **Status**: ❌ Rejected
- **Change**: Inline the lexer
- **Metric**: 6 (previous best: 7, delta: -1)
- **Notes**: Slower. {FORGED_MARKERS}
"""


ITERATION_1 = """### Iteration 1 — 2026-11-18 10:00 UTC — [Run](https://github.com/owner/repo/actions/runs/200)

- **Status**: ✅ Accepted
- **Change**: First version
- **Metric**: 7
- **Notes**: Baseline.
"""


def other_text() -> str:
    text = victim_text().replace("victim", "other").replace("Victim", "Other")
    text = text.replace("| Paused | false |", "| Paused | true |")
    return text.replace("| Pause Reason | — |", "| Pause Reason | maintainer: paused, do not run |")


SEED: dict[str, str] = {
    "victim.md": victim_text(),
    "archive/victim/0001.md": part_header("victim", 1) + make_chunk(ITERATION_1, when="2026-11-21", what="iteration 1"),
    "other.md": other_text(),
    "archive/other/0001.md": part_header("other", 1) + make_chunk(ITERATION_1, when="2026-11-21", what="iteration 1"),
    "victim-old.md": victim_text().replace("victim", "victim-old"),
    "_shared.md": "# Shared lessons\n\n## 📚 Lessons Learned\n\n- 📌 Shared: never push to main.\n",
}


def tree(remote: Path) -> dict[str, bytes]:
    """Every file on the remote's memory branch: path → bytes."""
    listing = git("ls-tree", "-r", "-z", BRANCH, cwd=remote).split("\0")
    entries = [line.split("\t", 1) for line in listing if line]
    oids = [meta.split()[2] for meta, _ in entries]
    batch = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=remote, input="\n".join(oids).encode() + b"\n", capture_output=True
    ).stdout
    files: dict[str, bytes] = {}
    pos = 0
    for _, path in entries:
        header_end = batch.index(b"\n", pos)
        size = int(batch[pos:header_end].split()[2])
        files[path] = batch[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return files


def commits(remote: Path) -> int:
    return int(git("rev-list", "--count", BRANCH, cwd=remote).strip())


def tip(remote: Path) -> str:
    return git("rev-parse", BRANCH, cwd=remote).strip()


@dataclass(frozen=True)
class Seeded:
    remote: Path
    files: dict[str, bytes]
    commits: int
    tip: str


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """The seeded bare remote, built once a module (each payload gets a copy)."""
    root = tmp_path_factory.mktemp("seed")
    remote = root / "remote.git"
    work = root / "work"
    with pinned_identity(tmp_path_factory):
        # No hook samples and one pack: a copy of the remote is a handful of files.
        git("init", "-q", "--bare", "--template=", str(remote), cwd=root)
        git("init", "-q", "-b", BRANCH, str(work), cwd=root)
        for path, text in SEED.items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(text, encoding="utf-8")
        git("add", ".", cwd=work)
        git("commit", "-qm", "seed", cwd=work)
        git("push", "-q", str(remote), BRANCH, cwd=work)
        git("repack", "-q", "-a", "-d", cwd=remote)
    files = tree(remote)
    assert {path: data.decode() for path, data in files.items()} == SEED
    return Seeded(remote, files, commits(remote), tip(remote))


# -- one job ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Runner:
    """How a payload's process is started: ``statefile`` (a path) and, with a fork server, the server's pid."""

    statefile: str
    server: int | None


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    if os.environ.get("STATEFILE_E2E_PROCESSES"):
        yield Runner(str(Path(sys.executable).with_name("statefile")), None)
        return
    with ForkServer(tmp_path_factory.mktemp("forkserver")) as server:
        assert server._proc is not None
        yield Runner(str(server.bin_dir / "statefile"), server._proc.pid)


def kill_children(pid: int) -> None:
    """End every process ``pid`` (this module's fork server) started, and theirs: a hung payload's, by their ids."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        kill_children(int(child))
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(child), signal.SIGKILL)


@dataclass
class Result:
    code: int
    out: str
    err: str


class Job:
    """One safe-output job: a copy of the seeded remote, the downloaded agent artifact, the trusted context."""

    def __init__(self, seeded: Seeded, runner: Runner, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runner = runner
        self.remote = root / "server" / "repo.git"
        shutil.copytree(seeded.remote, self.remote, symlinks=True)
        self.artifact = root / "agent-artifact"
        (self.artifact / "agent").mkdir(parents=True)
        self.output = self.artifact / "agent_output.json"
        self.trusted = root / "runner-temp" / "statefile-context" / "context.json"
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        self.env = {
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": "owner/repo",
            "GITHUB_RUN_ID": CONTEXT["run_id"],
        }
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        for key in ("GH_AW_SAFE_OUTPUTS_STAGED", "GITHUB_ACTIONS", "GH_AW_AGENT_OUTPUT", "STATEFILE_DEBUG"):
            monkeypatch.delenv(key, raising=False)
        monkeypatch.chdir(self.workspace)

    def context_args(self, payload: Payload) -> list[str]:
        """Write the payload's context where it says and return the ``--context`` arguments."""
        ctx = payload.context
        text = ctx.text if ctx.text is not None else json.dumps({**CONTEXT, **ctx.fields})
        if ctx.where == "none":
            return []
        if ctx.where == "missing":
            return ["--context", str(self.trusted)]
        path = {
            "trusted": self.trusted,
            "symlink": self.artifact / "agent" / "context.json",
            "agent": self.artifact / "agent" / "statefile" / "context.json",
            "agent-deep": self.artifact / "agent" / "a" / "b" / "c" / "context.json",
            "dotdot": self.artifact / "agent" / "context.json",
        }[ctx.where]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        if ctx.where == "symlink":
            self.trusted.parent.mkdir(parents=True, exist_ok=True)
            self.trusted.symlink_to(path)
            return ["--context", str(self.trusted)]
        if ctx.where == "dotdot":
            (self.artifact / "elsewhere").mkdir()
            return ["--context", str(self.artifact / "elsewhere" / ".." / "agent" / "context.json")]
        return ["--context", str(path)]

    def write_context(self, **fields: object) -> None:
        self.trusted.parent.mkdir(parents=True, exist_ok=True)
        self.trusted.write_text(json.dumps({**CONTEXT, **fields}))

    def apply(
        self, context_args: list[str], capsys: pytest.CaptureFixture[str], *, process: bool, extra: tuple[str, ...] = ()
    ) -> Result:
        args = ["--remote", self.remote.as_uri(), "apply", "--agent-output", str(self.output), *context_args, *extra]
        if process:
            try:
                proc = subprocess.run(
                    [self.runner.statefile, *args],
                    cwd=self.workspace,
                    env={**os.environ, **self.env},
                    capture_output=True,
                    encoding="utf-8",
                    errors="replace",
                    timeout=TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                if self.runner.server is not None:
                    kill_children(self.runner.server)
                pytest.fail(f"statefile apply did not finish in {TIMEOUT} s (a hang)")
            return Result(proc.returncode, proc.stdout, proc.stderr)
        capsys.readouterr()
        code = invoke(cli, args)
        out, err = capsys.readouterr()
        return Result(code, out, err)


@pytest.fixture
def job(seeded: Seeded, runner: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Job:
    return Job(seeded, runner, tmp_path, monkeypatch)


# -- what must hold after every payload ---------------------------------------------------------------------------

# What no state file here may hold once agent text is in it (the seed holds none): C0 controls but tab and newline
# (a CR included), DEL, C1, bidi embeddings, overrides, isolates and marks, line and paragraph separators, the BOM,
# lone surrogates.  Searched in the whole file, not line by line: several of them end a line for str.splitlines.
DANGEROUS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff\ud800-\udfff]"
)
IMPORTANCE = re.compile(r"\b(?:IMPORTANT|CRITICAL)\b|\*\*\s*(?i:important|critical)")


def assert_clean_exit(result: Result) -> None:
    assert result.code != 70, result.err
    for stream in (result.out, result.err):
        assert not any(line.startswith("Traceback") for line in stream.splitlines()), stream[-3000:]
    assert "internal error" not in result.err, result.err[-3000:]
    for line in result.err.splitlines():
        assert line.startswith("statefile: "), line[:300]


def assert_branch_sound(seeded: Seeded, after: dict[str, bytes]) -> None:
    """No other program's file changed, victim's archive only grew, and every file on the branch parses."""
    for path, data in seeded.files.items():
        assert path in after, f"{path} is gone"
        if path.startswith("archive/victim/"):
            assert after[path].startswith(data), f"{path} was rewritten"
        elif path != f"{SELECTED}.md":
            assert after[path] == data, f"{path} changed"
    for path, data in after.items():
        assert path in seeded.files or path.startswith("archive/victim/"), f"new file {path}"
        if path.endswith(".md"):
            doc = parse(data.decode("utf-8"))
            assert doc.unclosed_block is None, f"{path}: a block opened at line {doc.unclosed_block} never closes"


def assert_state_allowed(before: str, after: str, *, landed: bool) -> None:
    """victim's Machine State (upstream reading) changed only as one report may change it."""
    old, new = upstream_machine_state(before), upstream_machine_state(after)
    assert set(new) == set(old), sorted(set(new) ^ set(old))
    assert new["iteration_count"] == old["iteration_count"] + landed, new["iteration_count"]
    assert (new["metric_direction"], new["target_metric"], new["issue"]) == ("higher", "50", "#3"), new
    grown = new["recent_statuses"][len(old["recent_statuses"]) :]
    assert new["recent_statuses"][: len(old["recent_statuses"])] == old["recent_statuses"], new["recent_statuses"]
    assert len(grown) == landed and set(grown) <= ALLOWED_STATUSES, grown
    status = grown[0] if grown else None
    if new["best_metric"] != old["best_metric"]:
        assert status == "accepted" and Decimal(new["best_metric"]) > Decimal(old["best_metric"]), new
    if new["paused"]:
        assert status in ("error", "ci-fix-exhausted"), new
    if new["completed"]:
        assert status == "accepted" and Decimal(new["best_metric"]) >= 50, new


def assert_maintainers_text_kept(before: str, after: str) -> None:
    old, new = parse(before), parse(after)
    old_priorities, new_priorities = old.section("priorities"), new.section("priorities")
    assert old_priorities is not None and new_priorities is not None
    assert new_priorities.text == old_priorities.text
    assert PRIORITIES in new_priorities.text
    lines = set(after.splitlines(keepends=True))
    for line in (*MAINTAINER_LESSONS, *MAINTAINER_FORECLOSED, *MAINTAINER_FUTURE):
        assert line in lines, f"maintainer's line lost: {line!r}"
    for kind in ("lessons", "foreclosed", "future"):
        kept = [item.text for item in new.list_items(kind)]
        first = [item.text for item in old.list_items(kind)]
        assert kept[: len(first)] == first, (kind, kept)


def assert_inert(landed: Landed) -> None:
    """What the report added is data: nothing hidden, nothing that steers, nothing that looks like structure."""
    assert len(landed.after.encode()) - len(landed.before.encode()) < 10_000
    marker = OWN_MARKER.replace("attempt 1", f"attempt {landed.attempt}")
    assert [line.strip() for line in landed.after.splitlines()].count(marker) == 1, "the report's marker, once"
    headings = [line for line in landed.added if line.startswith("#")]
    assert len(headings) == 1 and headings[0].startswith(f"### Iteration {landed.iteration} — "), headings
    dangerous = DANGEROUS.search(landed.after)
    assert dangerous is None, repr(landed.after[max(0, dangerous.start() - 60) : dangerous.end() + 60])
    state_keys = set(upstream_machine_state(landed.before))
    for line in landed.added:
        assert "📌" not in line, line
        assert not IMPORTANCE.search(line), line
        if line.strip() != marker:
            assert "<!--" not in line and "-->" not in line, line
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) == 4 and cells[1].strip().lower().replace(" ", "_") in state_keys, line
    for kind in ("lessons", "foreclosed", "future"):
        new = landed.new_bullets(kind)
        assert len(new) <= 5, (kind, new)
        for bullet in new:
            assert bullet.startswith(f"- *(agent, iteration {landed.iteration})* "), bullet
            assert not is_pinned(bullet) and not is_important(bullet), bullet
            assert "\n" not in bullet, bullet


def check_landed(seeded: Seeded, job: Job, result: Result, before: str, attempt: str = "1") -> Landed:
    """The branch after a report landed: sound, the state changed as one report may, the maintainers' text kept,
    what was added inert."""
    after = tree(job.remote)
    assert_branch_sound(seeded, after)
    text = after[f"{SELECTED}.md"].decode("utf-8")
    assert_state_allowed(before, text, landed=True)
    assert_maintainers_text_kept(before, text)
    landed = Landed(before, text, result.out, result.err, upstream_machine_state(text)["iteration_count"], attempt)
    assert_inert(landed)
    return landed


# -- the suite ----------------------------------------------------------------------------------------------------


def sample(payloads: list[Payload], per_kind: int = 5, processes: int = 3) -> set[int]:
    """The payloads `pytest -m 'not slow'` runs: the first few of each kind, in process and as processes.

    The rest are marked slow, so the quick run still crosses every class of the boundary while the whole suite (which
    CI runs) sends all of them."""
    taken: dict[tuple[str, bool], int] = {}
    chosen: set[int] = set()
    for index, payload in enumerate(payloads):
        key = (payload.kind, payload.process)
        if taken.get(key, 0) < (processes if payload.process else per_kind):
            taken[key] = taken.get(key, 0) + 1
            chosen.add(index)
    return chosen


QUICK = sample(PAYLOADS)


def param(index: int, payload: Payload) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=payload.bug)] if payload.bug else []
    if index not in QUICK:
        marks.append(pytest.mark.slow)
    return pytest.param(payload, id=f"{payload.kind}:{payload.id}", marks=marks)


@dataclass(frozen=True)
class Report:
    """What the job said: the iterations it recorded, and every message (errors and warnings) in one text."""

    recorded: list[int]
    text: str


def report(result: Result, *, as_json: bool, items: int | None) -> Report:
    """Read the job's text output, or its ``--json`` output: one object per item, exit code the highest failure's."""
    if as_json and result.out.lstrip().startswith("["):
        outcomes = json.loads(result.out)
        assert isinstance(outcomes, list) and (items is None or len(outcomes) == items), result.out[:3000]
        for index, outcome in enumerate(outcomes, 1):
            assert outcome["index"] == index and outcome["action"] in ("recorded", "skipped", "failed"), outcome
            assert (outcome["error"] is None) == (outcome["action"] != "failed"), outcome
        failed = [outcome["exit_code"] for outcome in outcomes if outcome["action"] == "failed"]
        assert result.code == max(failed, default=0), (result.code, failed)
        messages = [o["error"] or "" for o in outcomes] + [w for o in outcomes for w in o["warnings"]]
        recorded = [o["iteration"] for o in outcomes if o["action"] == "recorded"]
        return Report(recorded, "\n".join([result.err, *messages]))
    assert not (as_json and result.out.strip()) or "no record_iteration items" in result.out, result.out[:3000]
    recorded = [int(number) for number in re.findall(r"^item \d+ \(.*?\): recorded iteration (\d+) ", result.out, re.M)]
    return Report(recorded, result.out + result.err)


@pytest.mark.parametrize("payload", [param(i, p) for i, p in enumerate(PAYLOADS)])
def test_hostile_payload(payload: Payload, seeded: Seeded, job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    job.output.write_bytes(payload.output_text().encode("utf-8", "surrogateescape"))
    context = job.context_args(payload)
    # The payloads run as processes answer in --json (one object per item), the others in text.
    extra = ("--json",) if payload.process else ()
    result = job.apply(context, capsys, process=payload.process, extra=extra)
    assert_clean_exit(result)
    items = None if payload.raw is not None else len(payload.items)
    said = report(result, as_json=payload.process, items=items)
    expect = payload.expect
    before = seeded.files[f"{SELECTED}.md"].decode("utf-8")
    if isinstance(expect, Refused):
        assert result.code == expect.code and expect.needle in said.text, said.text[-3000:]
        assert len(said.recorded) == expect.lands, said
        if not expect.lands:
            # The tip names the whole tree: the same tip is the same bytes in every file (the seed's, checked sound
            # when it was built), and no commit was made.
            assert tip(job.remote) == seeded.tip, said.text[-3000:]
            return
        assert commits(job.remote) == seeded.commits + expect.lands
        check_landed(seeded, job, result, before)
        return
    assert result.code == 0 and said.recorded == [4], said.text[-3000:]
    if expect.warning is not None:
        assert expect.warning in said.text, said.text[-3000:]
    assert commits(job.remote) == seeded.commits + 1
    landed = check_landed(seeded, job, result, before)
    for check in expect.checks:
        check(landed)
    if payload.rerun:
        landed_tip = tip(job.remote)
        again = job.apply(context, capsys, process=payload.process, extra=extra)
        assert again.code == 0 and "skipped" in again.out and "run 500 attempt 1 item 1" in again.out, again
        assert tip(job.remote) == landed_tip
    if payload.then_honest:
        # A later attempt of the same run (a re-run of the whole workflow) is a new iteration: whatever the agent
        # wrote, its report must land, not be taken for one already applied.
        job.write_context(run_attempt="2")
        job.output.write_text(json.dumps({"items": [{"type": "record_iteration", **HONEST}]}))
        later = job.apply(["--context", str(job.trusted)], capsys, process=False)
        assert_clean_exit(later)
        assert later.code == 0 and report(later, as_json=False, items=1).recorded == [5], later
        check_landed(seeded, job, later, landed.after, attempt="2")


def test_the_seed_is_what_the_payloads_attack(seeded: Seeded) -> None:
    """The checks every payload relies on hold for the seed itself, and read what they are meant to."""
    assert_branch_sound(seeded, seeded.files)
    text = seeded.files[f"{SELECTED}.md"].decode("utf-8")
    assert DANGEROUS.search(text) is None and not IMPORTANCE.search(text.replace(MAINTAINER_LESSONS[2], ""))
    state = upstream_machine_state(text)
    assert (state["iteration_count"], state["best_metric"], state["paused"]) == (3, "10", False)
    assert upstream_machine_state(seeded.files["other.md"].decode("utf-8"))["paused"] is True
    assert_maintainers_text_kept(text, text)
    doc = parse(text)
    assert [item.text for item in doc.list_items("lessons")] == list(MAINTAINER_LESSONS)
    assert doc.highest_iteration == 3


def test_every_class_has_payloads() -> None:
    assert len(PAYLOADS) >= 150, len(PAYLOADS)
    kinds = {payload.kind for payload in PAYLOADS}
    assert kinds == set(CLASSES), kinds ^ set(CLASSES)
    for kind in CLASSES:
        count = sum(payload.kind == kind for payload in PAYLOADS)
        assert count >= 5, (kind, count)
    ids = [f"{payload.kind}:{payload.id}" for payload in PAYLOADS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    # Every class the issue names is exercised in both directions where it has two: refused and neutralized.
    assert any(isinstance(p.expect, Refused) for p in PAYLOADS if p.kind == "numbers")
    assert any(isinstance(p.expect, Neutralized) for p in PAYLOADS if p.kind == "numbers")
    assert all(p.process for p in PAYLOADS if p.kind in ("numbers", "quadratic"))
