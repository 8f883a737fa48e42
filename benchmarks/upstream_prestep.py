"""The upstream Autoloop pre-step, as the baseline the scheduler benchmark times whole-process.

    python benchmarks/upstream_prestep.py REMOTE_URL DEST

What gh-aw and githubnext/autoloop's scheduler do today to see every program: gh-aw's repo-memory clones the
memory branch shallow (``git clone --depth 1 --branch memory/autoloop``) into a folder, then the scheduler reads
each ``{program}.md`` there with ``os.stat`` for its size and a regex parse of the ⚙️ Machine State table (the
reader in tests/upstream.py, a re-statement of the scheduler's).  Prints one JSON object: program → size and
machine state, about what ``statefile report --all`` prints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from upstream import upstream_machine_state  # the scheduler's reader, shared with the tests


def main(remote: str, dest: str) -> int:
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--single-branch", "--branch", "memory/autoloop", remote, dest],
        check=True,
    )
    programs = {}
    for entry in sorted(os.scandir(dest), key=lambda e: e.name):
        if entry.name.endswith(".md") and entry.is_file():
            size = os.stat(entry.path).st_size
            with open(entry.path, encoding="utf-8") as handle:
                state = upstream_machine_state(handle.read())
            programs[entry.name[:-3]] = {"size": size, **state}
    json.dump(programs, sys.stdout, indent=2, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
