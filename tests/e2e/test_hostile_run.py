"""The hostile run's inputs stay in CI: a representative subset of ``tests/hostile`` through the same code.

Each case marked ``ci`` in tests/hostile/inputs.py is built for real and its commands run as processes under 1 GiB
of address space and a 10 s timeout; a case fails on a hang, exit 70, a traceback, a multi-line or missing error, a
leaked secret, a misleading exit or damage left behind (tests/hostile/suite.py says exactly what is checked).  The
content cases run only the commands below, so the subset stays a few seconds per case; ``python tests/hostile``
runs every case with every command.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hostile.inputs import CASES
from hostile.suite import TOKEN, Case, Setup, cmd, describe, run_case, violations
from hostile.workspace import make_repos

pytestmark = pytest.mark.slow  # hundreds of console-script runs under resource limits

# The commands a content case keeps here: one reader of each kind, the gate, and the main writer.
CI_VERBS = {"show", "render", "history", "list", "check", "search", "export", "config", "record", "import"}
GLOBAL_WITH_VALUE = {"--dir", "--repo", "--branch", "--remote", "--max-bytes"}


def verb(args: tuple[str, ...]) -> str:
    """The command in ``args`` after any global options."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in GLOBAL_WITH_VALUE else rest[1:]
    return rest[0] if rest else ""


# Commands a case keeps here at most, spread evenly over its list (a case of every branch name or every fsck rule
# keeps one input in three or four; the full run, ``python tests/hostile``, tries them all).
CI_COMMANDS = 11


def trimmed(build):  # type: ignore[no-untyped-def]
    def build_ci(root):  # type: ignore[no-untyped-def]
        setup: Setup = build(root)
        if len(setup.commands) > 20:
            setup.commands = [c for c in setup.commands if verb(c.args) in CI_VERBS]
        if len(setup.commands) > CI_COMMANDS:
            step = len(setup.commands) / CI_COMMANDS
            setup.commands = [setup.commands[int(i * step)] for i in range(CI_COMMANDS)]
        return setup

    return build_ci


CI_CASES = [replace(case, build=trimmed(case.build)) for case in CASES if case.ci]


def test_the_subset_covers_the_issue() -> None:
    """The CI subset keeps an input of every kind of break the issue lists that can be built anywhere."""
    kept = {case.keeps for case in CI_CASES}
    assert {"#1", "#4", "#5", "#6", "#7", "#9", "#10", "#12"} <= kept, kept


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, RLIMIT_AS and process groups are POSIX")
@pytest.mark.parametrize("case", CI_CASES, ids=[case.name for case in CI_CASES])
def test_hostile_input(case) -> None:  # type: ignore[no-untyped-def]
    results = run_case(case)
    assert results, "the case ran no command"
    bad = [describe(result) for result in results if result.violations]
    assert not bad, "\n".join(bad)


def test_the_checks_can_fail() -> None:
    """The checker is not blind: each kind of violation is reported when it happens."""
    assert violations(cmd("x"), None, "", "", ()) == ["hang"]
    assert "exit 70" in violations(cmd("x"), 70, "", "statefile: internal error: boom", ())
    assert "traceback" in violations(cmd("x"), 2, "", "Traceback (most recent call last):\n  boom", ())
    assert any(v.startswith("secret") for v in violations(cmd("x"), 0, f"token {TOKEN}", "", (TOKEN,)))
    assert any(v.startswith("multi-line") for v in violations(cmd("x"), 2, "", "statefile: a\nstatefile: b\n", ()))
    assert violations(cmd("x"), 2, "", "statefile: note: read local\nstatefile: error: x\n", ()) == []
    assert violations(cmd("x"), 3, "", "", ()) == ["silent failure"]
    assert any(v.startswith("misleading") for v in violations(cmd("x", refuse=True), 0, "ok", "", ()))
    assert any(v.startswith("signal") for v in violations(cmd("x"), -9, "", "", ()))


def test_a_command_that_hangs_is_killed_and_reported(tmp_path: Path) -> None:
    """A real hang: an editor that never returns.  The run stops it at the timeout, with everything it started."""
    marker = tmp_path / "still-running"

    def build(root: Path) -> Setup:
        make_repos(root)
        waits = f"sh -c 'sleep 2; touch {marker}' --"
        return Setup(root / "work", [cmd("edit", "perf", env={"EDITOR": waits})])

    results = run_case(Case("hangs", "-", build), timeout=1.0)
    assert [r.violations for r in results] == [["hang"]]
    time.sleep(2.5)  # past the moment a surviving editor would have made the marker
    assert not marker.exists()  # the editor (a grandchild) was killed with the command
