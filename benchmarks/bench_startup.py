"""Start-up: whole-process ``statefile --version`` and ``statefile report`` against ``python -c pass``.

    python benchmarks/bench_startup.py [--quick]

``report`` runs in a runner clone whose memory branch holds 10 programs (no remote: what is measured is start-up,
not the network).  The last row runs ``--version`` without a bytecode cache for statefile's own modules
(PYTHONDONTWRITEBYTECODE=1 in a source checkout), as this development environment does.  The rows also say
which heavy libraries each command imported (GitPython, markdown-it-py, python-frontmatter): a command should
import only what it needs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from _fixtures import make_memory_remote, runner_clone
from _timing import STATEFILE, Row, compare, measure, pin_identity, run

BENCH = "start-up"
HEAVY = ("git", "markdown_it", "frontmatter", "yaml", "gitdb")
# Runs a statefile command in-process and prints which heavy libraries it imported (stdout of the command is
# discarded; the list goes to stderr).
_PROBE = """
import contextlib, io, json, sys
from statefile.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def imported(args: list[str], cwd: Path) -> list[str]:
    """The heavy libraries ``statefile args`` imports."""
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=HEAVY), *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    result: list[str] = json.loads(proc.stderr.strip().splitlines()[-1])
    return result


def rows(quick: bool = False) -> list[Row]:
    """Every row of this benchmark."""
    reps = 10 if quick else 30
    root = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        runner = runner_clone(make_memory_remote(root, 10, history=0), root / "runner")
        python = [sys.executable, "-c", "pass"]
        # The libraries keep the bytecode pip compiled at install time; statefile's own modules (a source checkout
        # that may not write __pycache__) are compiled from source on every start.
        no_cache: dict[str, str | None] = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": None}
        ms = measure(
            {
                "python -c pass": (lambda: run(python, root), reps),
                "python -c 'import statefile.cli'": (
                    lambda: run([sys.executable, "-c", "import statefile.cli"], root),
                    reps,
                ),
                "statefile --version": (lambda: run([STATEFILE, "--version"], root), reps),
                "statefile report (10 programs, local)": (lambda: run([STATEFILE, "report"], runner), reps),
                "statefile --version, no bytecode cache": (
                    lambda: run([STATEFILE, "--version"], root, env=no_cache),
                    reps,
                ),
            }
        )
        base = "python -c pass"
        out = [Row(BENCH, "", base, ms[base])]
        for flow, args in (
            ("python -c 'import statefile.cli'", None),
            ("statefile --version", ["--version"]),
            ("statefile report (10 programs, local)", ["report"]),
            ("statefile --version, no bytecode cache", None),
        ):
            note = ""
            if args is not None:
                heavy = imported(args, runner)
                note = "imports " + (", ".join(heavy) if heavy else "none of " + "/".join(HEAVY[:3]))
            out.append(compare(BENCH, "", ms, flow, base, note=note))
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    pin_identity()
    for row in rows(args.quick):
        ratio = f"{row.ratio:.2f}×" if row.ratio is not None else ""
        print(f"{row.flow:<40} {row.ms:>8.1f} ms  {ratio:>7}  {row.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
