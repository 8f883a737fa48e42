"""``statefile demo``: the command lines it echoes are the ones it ran, and can be pasted into a shell."""

from __future__ import annotations

import shlex

from statefile.cli import cli
from statefile.cli.demo import run_demo


def test_demo_echoes_command_lines_a_shell_reads_back_as_run() -> None:
    """The demo echoed `--change Vectorize the tokenizer inner loop`, unquoted: pasted, it was four arguments."""
    lines: list[str] = []
    run_demo(cli, lines.append)
    commands = [shlex.split(line.strip()[2:]) for line in lines if line.strip().startswith("$ ")]
    assert [
        "statefile", "record", "mid-life", "--status", "accepted", "--change", "Vectorize the tokenizer inner loop",
        "--metric", "131.5",
    ] in commands  # fmt: skip
    assert "$ statefile record messy --status error --change 'Parallel parse (CI timed out)'" in "\n".join(lines)
