"""The test suite itself: self-contained on a fresh clone, the same every run, its fixtures as generated."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE_BUDGET, TESTS
from hypothesis import settings

ROOT = TESTS.parent


def test_tests_reach_the_real_corpus_only_through_conftest() -> None:
    """A test that names a real file or the ../shared path directly would fail (not skip) on a fresh clone."""
    offenders = []
    for path in sorted(TESTS.glob("*.py")):
        if path.name in ("conftest.py", Path(__file__).name):
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"shared/corpus|parents\[2\]|__[0-9a-f]{7}\.md|idx\d{11}\.md", text):
            offenders.append(path.name)
    assert offenders == []


def test_the_generated_fixtures_match_their_generator() -> None:
    """tests/data/make_corpus.py builds some fixtures from the package's own template words: a template change must
    not leave the files on disk describing a format the generator no longer writes."""
    proc = subprocess.run(
        [sys.executable, str(TESTS / "data" / "make_corpus.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_docstring_points_outside_the_repository() -> None:
    """As seen in issue 11: no docstring points outside the repository."""
    outside = re.compile(r"\b(?:FORMAT|DESIGN|GHAW)\.md\b|\.\./shared|/work/")
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "statefile").rglob("*.py"))
        if outside.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_default_profile_is_derandomized_with_a_fixed_budget() -> None:
    """As seen in issue 11: the default profile is derandomized with a fixed budget."""
    ci = settings.get_profile("ci")
    assert ci is not None and ci.derandomize and ci.database is None and ci.deadline is None
    # Every property states its count through conftest.examples(N): fixed in CI, scaled when exploring.
    unscaled = [
        f"{path.name}: @settings({arguments})"
        for path in sorted(TESTS.glob("test_*.py"))
        for arguments in re.findall(r"^@settings\((.*?)\)\n(?=@|def )", path.read_text(encoding="utf-8"), re.M | re.S)
        if "max_examples=examples(" not in arguments
    ]
    assert unscaled == [], "write @settings(max_examples=examples(N)) (tests/conftest.py)"
    loaded = settings.default
    if loaded is not None and loaded.derandomize:  # the CI profile is loaded (HYPOTHESIS_PROFILE unset)
        counts = []
        for path in sorted(TESTS.glob("test_*.py")):
            module = importlib.import_module(path.stem)
            for name in dir(module):
                chosen = getattr(getattr(module, name), "_hypothesis_internal_use_settings", None)
                if name.startswith("test_") and chosen is not None:
                    counts.append(chosen.max_examples)
        assert sum(counts) <= EXAMPLE_BUDGET, counts  # the ceiling docs/development.md and conftest document
