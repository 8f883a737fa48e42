"""Shared fixtures: the fixture corpus (tests/data/corpus), the real corpus when present, a pinned git identity,
and the prepared repositories and state-file texts tests in several modules share (at the end).

Two corpora of state files:

- the *fixture corpus*, ``tests/data/corpus/*.md``: 30 invented files owned by this project that reproduce every
  quirk of the real files (``tests/data/MANIFEST.md`` maps each file to its quirks).  Always present.
- the *real corpus*, 27 state files from public repositories, kept outside this repository in
  ``../shared/corpus/real`` (or wherever ``STATEFILE_CORPUS`` points).  Tests over it run when it is there and
  are reported as skipped, with the reason, when it is not: a fresh clone passes on its own.
"""

from __future__ import annotations

import compileall
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from gitutil import Repos, copy_repos, make_repos, run_statefile
from gitutil import git as repo_git
from hypothesis import HealthCheck, settings
from synthetic import synthetic_state

import statefile
from statefile.cli import cli
from statefile.cli.run import invoke
from statefile.model.document import parse
from statefile.model.history import render_iteration
from statefile.model.template import new_state_file
from statefile.store import Store

# The suite says the same every run.  The default profile, "ci", draws the same examples each time (derandomize),
# keeps no example database between runs (nothing found once is replayed later), and has no timing-based failures
# (no deadline, no too-slow health check: a loaded machine must not change the outcome).  Its example budget is
# fixed: each property states its count at the test with examples(N) (4,010 in all today), and the whole suite
# draws at most EXAMPLE_BUDGET (tests/test_suite.py checks both).  Exploring for new counterexamples is a
# separate, opt-in run with fresh randomness and EXPLORE_SCALE times the examples (docs/development.md, "Tests"):
#   HYPOTHESIS_PROFILE=explore python -m pytest tests/policy/test_compaction.py tests/e2e/test_fuzz.py
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
# STATEFILE_SOAK=1 makes the few exhaustive loops exhaustive (every budget step, …); the default run stays lean.
SOAK = bool(os.environ.get("STATEFILE_SOAK"))
EXPLORE_SCALE = 20
EXAMPLE_BUDGET = 5000
_TIMING = [HealthCheck.too_slow]
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True, suppress_health_check=_TIMING
)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True, suppress_health_check=_TIMING)
settings.load_profile(PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    """Compile statefile's modules once, before any test starts a process that imports them.

    Hundreds of tests start statefile (or gh-aw's re-stated jobs) as a process.  Where PYTHONDONTWRITEBYTECODE is
    set, as in development environments that keep checkouts clean, each of them would compile every module again:
    about half a second of CPU a process.  An installed package has its bytecode (pip compiles it at install), so
    compiling here measures what users run.  The files go to ``__pycache__`` folders, which git ignores."""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the controlling process, before the workers start
        compileall.compile_dir(Path(statefile.__file__).parent, quiet=2)


def examples(count: int) -> int:
    """A property's example count: ``count`` in the CI profile, ``EXPLORE_SCALE`` times that when exploring."""
    return count * EXPLORE_SCALE if PROFILE == "explore" else count


TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "data" / "corpus"
SAMPLES = TESTS.parent / "samples"
# ../shared beside the checkout; STATEFILE_CORPUS points elsewhere (a clone that is not beside ../shared).
CORPUS = Path(os.environ.get("STATEFILE_CORPUS") or TESTS.parents[1] / "shared" / "corpus" / "real")
REAL_CORPUS_ABSENT = (
    "the real corpus (../shared/corpus/real, or STATEFILE_CORPUS) is not beside this checkout; "
    "the fixture corpus in tests/data/corpus covers its quirks"
)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "statefile tests",
    "GIT_AUTHOR_EMAIL": "tests@statefile.invalid",
    "GIT_COMMITTER_NAME": "statefile tests",
    "GIT_COMMITTER_EMAIL": "tests@statefile.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def corpus_files() -> list[Path]:
    """The real state files (empty when ../shared is not beside the checkout)."""
    return sorted(CORPUS.glob("*.md")) if CORPUS.is_dir() else []


def fixture_files() -> list[Path]:
    """The fixture corpus: every ``tests/data/corpus/*.md``."""
    return sorted(FIXTURES.glob("*.md"))


def fixture_text(name: str) -> str:
    """One fixture's text (``"missing-history-heading.md"``)."""
    return read_raw(FIXTURES / name)


def real_file(tag: str) -> Path:
    """The real corpus file whose name contains ``tag`` (a commit such as ``"24ec373"``); skips without the corpus."""
    found = [path for path in corpus_files() if tag in path.name]
    if not found:
        pytest.skip(REAL_CORPUS_ABSENT if not corpus_files() else f"no real corpus file named *{tag}*")
    return found[0]


def real_params() -> list[object]:
    """Parameters over the real corpus: one per file, or one skipped parameter saying why there are none."""
    files = corpus_files()
    if not files:
        return [pytest.param(None, id="real-corpus-absent", marks=pytest.mark.skip(reason=REAL_CORPUS_ABSENT))]
    return [pytest.param(path, id=f"real:{path.name[:60]}") for path in files]


def corpus_params() -> list[object]:
    """Parameters over both corpora: every fixture, then every real file (or the skipped stand-in for them)."""
    fixtures = [pytest.param(path, id=f"fixture:{path.name[:-3]}") for path in fixture_files()]
    return fixtures + real_params()


def all_corpus_files() -> list[Path]:
    """Every fixture and every real file that is present (for hypothesis strategies that sample files)."""
    return fixture_files() + corpus_files()


def read_raw(path: Path) -> str:
    """A file's text as statefile sees it, undecodable bytes kept as surrogates."""
    return path.read_bytes().decode("utf-8", "surrogateescape")


def _pin_identity(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    # Temporary files (an edit's saved text, a folder store's half-written file) stay in the test's folders, not
    # the machine's /tmp: processes read TMPDIR, this process its cached tempfile.tempdir.
    (home / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(home / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(home / "tmp"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    monkeypatch.delenv("STATEFILE_REPO", raising=False)


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    _pin_identity(monkeypatch, tmp_path_factory)


@contextmanager
def pinned_identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The same pinned identity and private HOME for a module-scoped fixture, which runs before the autouse one."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _pin_identity(monkeypatch, tmp_path_factory)
        yield


def installed_tool(name: str) -> str:
    """A test extra's command-line tool (zizmor, twine, scriv…): beside this Python (the venv's bin), else on PATH;
    the test skips, saying how to install it, when there is none."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (it is in the test extra: pip install -e '.[test]')")
    return found


# -- shared by tests in several modules ------------------------------------------------------------------------------


@pytest.fixture
def unreadable_folder(tmp_path: Path) -> Path:
    """A folder store with one good program, a link and a FIFO named as programs."""
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "perf.md").write_text(new_state_file("perf"), "utf-8")
    (memory / "linked.md").symlink_to(memory / "perf.md")
    if hasattr(os, "mkfifo"):
        os.mkfifo(memory / "piped.md")
    return memory


@pytest.fixture(scope="session")  # copied for each test, never changed
def recorded_template(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    """A remote and a clone whose memory holds ``perf`` with one recorded iteration, built once a module."""
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("recorded_template"))
        assert run_statefile("-q", "init", "perf", cwd=repos.work).returncode == 0
        recorded = run_statefile("-q", "record", "perf", "--status", "accepted", "--metric", "5", cwd=repos.work)
        assert recorded.returncode == 0
    return repos


@pytest.fixture
def recorded_repos(recorded_template: Repos, tmp_path: Path) -> Repos:
    """A copy of :func:`recorded_template` of this test's own."""
    return copy_repos(recorded_template, tmp_path)


def newest_log(recorded_repos: Repos) -> str:
    """``log perf -n 1 --json``: what changes when anything is written."""
    return run_statefile("log", "perf", "-n", "1", "--json", cwd=recorded_repos.work).stdout


def assert_refused(recorded_repos: Repos, code: int, *args: str, needle: str) -> None:
    """The command fails with ``code`` and one line holding ``needle``, and writes nothing."""
    before = newest_log(recorded_repos)
    proc = run_statefile(*args, cwd=recorded_repos.work)
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert newest_log(recorded_repos) == before


MEMORY_BRANCH = "memory/autoloop"


@dataclass
class GuardResult:
    code: int
    out: str
    err: str

    @property
    def error_line(self) -> str:
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        assert "Traceback" not in self.err
        return lines[0]


@dataclass
class GuardRepo:
    root: Path
    work: Path
    remote: Path

    def refs(self) -> dict[str, str]:
        """Every ref here and on the remote (the memory, and anything a mistake could have created)."""
        here = repo_git("for-each-ref", "--format=%(refname) %(objectname)", cwd=self.work)
        there = repo_git("for-each-ref", "--format=%(refname) %(objectname)", cwd=self.remote)
        refs = {f"work:{line.split()[0]}": line.split()[1] for line in here.splitlines()}
        refs.update({f"remote:{line.split()[0]}": line.split()[1] for line in there.splitlines()})
        return refs

    def remote_file(self, path: str, branch: str = MEMORY_BRANCH) -> str:
        return repo_git("show", f"{branch}:{path}", cwd=self.remote)


@pytest.fixture(scope="session")  # copied for each test, never changed
def guard_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare remote and a work clone; memory/autoloop (on the remote only) holds perf, latency and pipeline."""
    root = tmp_path_factory.mktemp("guard")
    with pinned_identity(tmp_path_factory):
        repos = make_repos(root)
        repo_git("remote", "set-url", "origin", "../remote.git", cwd=repos.work)  # copies of root keep working
        files = {
            "perf.md": synthetic_state("perf", 12, seed=1, lessons=4),
            "latency.md": synthetic_state("latency", 3, seed=2),
            "pipeline.md": synthetic_state("pipeline", 2, seed=3),
        }
        with Store.open(repos.work, remote="origin") as store:
            store.write_files(files, "seed")
        repo_git(
            "branch", "-D", MEMORY_BRANCH, cwd=repos.work
        )  # a CI clone: the memory branch only as origin/memory/autoloop
    return root


@pytest.fixture
def guard_repo(guard_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GuardRepo]:
    root = tmp_path / "copy"
    shutil.copytree(guard_template, root, symlinks=True)
    work = root / "work"
    monkeypatch.chdir(work)
    for key in ("STATEFILE_REMOTE", "STATEFILE_BRANCH", "STATEFILE_DIR", "STATEFILE_JSON", "NO_COLOR",
                "STATEFILE_AUTOLOOP_JSON"):  # fmt: skip
        monkeypatch.delenv(key, raising=False)
    yield GuardRepo(root, work, root / "remote.git")


def guard_run(capsys: pytest.CaptureFixture[str], *args: str) -> GuardResult:
    """Run a command in-process, exactly as the console script does (statefile.cli.main → invoke)."""
    capsys.readouterr()
    code = invoke(cli, list(args))
    captured = capsys.readouterr()
    return GuardResult(code, captured.out, captured.err)


def refs_unchanged(guard_repo: GuardRepo, before: dict[str, str]) -> None:
    assert guard_repo.refs() == before


DRIFTED_HEADING = "## Machine State\n"


def drift_heading(capsys: pytest.CaptureFixture[str], program: str) -> None:
    with Store.open(".", remote="origin") as store:
        text = store.read_text(program) or ""
        store.write_files({f"{program}.md": text.replace("## ⚙️ Machine State\n", DRIFTED_HEADING, 1)}, "drift")


@pytest.fixture(scope="session")  # copied for each test, never changed
def initialized_template(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("template"))
        assert run_statefile("-q", "init", "perf", cwd=repos.work).returncode == 0
    return repos


@pytest.fixture
def initialized_repos(initialized_template: Repos, tmp_path: Path) -> Repos:
    return copy_repos(initialized_template, tmp_path)


def only_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    return proc.stderr


FIXED_NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def entry_text(n: int, *, status: str = "accepted", metric: str | None = None, notes: str | None = None) -> str:
    return render_iteration(number=n, when=f"2026-03-{n % 28 + 1:02d} 10:00", status=status, metric=metric,
                            change=f"change {n}", notes=notes)  # fmt: skip


def state_file_text(entries: str, **fields: object) -> str:
    return new_state_file("perf", **fields).replace("*(No iterations yet.)*\n", entries)


def covered_numbers(text: str) -> set[int]:
    return {n for e in parse(text).history for n in e.covers}


def changed_lines(before: str, after: str) -> list[str]:
    """Lines removed or added between two texts (keepends)."""
    diff = difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True))
    return [line for line in diff if line[:1] in "+-"]


SECTION_PREFIXES = ["", "📚 ", "[WIP] ", "3. ", "2) ", "IV. ", "#4 ", "🧠 [agent] 1. ", "**", "Section 5: ", "— ", "» "]


SECTION_SUFFIXES = ["", " (pruned)", " — newest first", " [auto]", " 📌", "**", " & more", ":"]
