"""Shared fixtures: the fixture corpus (tests/data/corpus), the real corpus when present, a pinned git identity.

Two corpora of state files:

- the *fixture corpus*, ``tests/data/corpus/*.md``: 30 invented files owned by this project that reproduce every
  quirk of the real files (``tests/data/MANIFEST.md`` maps each file to its quirks).  Always present.
- the *real corpus*, 27 state files from public repositories, kept outside this repository in
  ``../shared/corpus/real`` (or wherever ``STATEFILE_CORPUS`` points).  Tests over it run when it is there and
  are reported as skipped, with the reason, when it is not: a fresh clone passes on its own.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The suite says the same every run.  The default profile, "ci", draws the same examples each time (derandomize),
# keeps no example database between runs (nothing found once is replayed later), and has no timing-based failures
# (no deadline, no too-slow health check: a loaded machine must not change the outcome).  Its example budget is
# fixed: each property states its count at the test with examples(N) (4,010 in all today), and the whole suite
# draws at most EXAMPLE_BUDGET (tests/test_what_was_seen.py checks both).  Exploring for new counterexamples is a
# separate, opt-in run with fresh randomness and EXPLORE_SCALE times the examples (docs/development.md, "Tests"):
#   HYPOTHESIS_PROFILE=explore python -m pytest tests/policy/test_compaction_properties.py tests/e2e/test_fuzz.py
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
