"""Shared fixtures: the real corpus, and a pinned git identity (CI has none)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

# The suite says the same every run: hypothesis draws the same examples each time (derandomize) and keeps no
# example database between runs.  Exploring for new counterexamples is a separate, opt-in run:
#   HYPOTHESIS_PROFILE=explore python -m pytest tests/test_reliability_fuzz.py
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, max_examples=2000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# ../shared beside the checkout; STATEFILE_CORPUS points elsewhere (a clone that is not beside ../shared).
CORPUS = Path(os.environ.get("STATEFILE_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real")
SAMPLES = Path(__file__).resolve().parents[1] / "samples"

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


def read_raw(path: Path) -> str:
    """A file's text as statefile sees it, undecodable bytes kept as surrogates."""
    return path.read_bytes().decode("utf-8", "surrogateescape")


def _pin_identity(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
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
