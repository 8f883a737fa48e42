"""The README's quickstart and CI agree: `.ci/run` runs exactly the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _commands(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S)]


def test_ci_runs_the_readmes_test_command() -> None:
    readme = _commands((ROOT / "README.md").read_text(encoding="utf-8"))
    test_command = next(c for c in readme if "'.[test]'" in c and "pytest" in c)
    assert "\n" not in test_command, "the test command is one line a user can paste"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == test_command
