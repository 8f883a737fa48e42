"""Repositories for the benchmarks: a bare remote whose memory branch holds P realistic programs, built fast.

The branch is written with ``git fast-import`` (one process, no work tree), so 1000 programs take about a second.
Program files come from tests/synthetic.py (the upstream template, 10–49 iterations, some
with agent-written range lines: 5–25 KB each, like a real fleet under a 30 KB budget).  After the first commit
the branch gets ``history`` more commits, each appending an iteration to one program, so fetches and clones move a
realistic history rather than a single snapshot.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from _timing import sh

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # synthetic.py, shared with the tests
from synthetic import synthetic_state

BRANCH = "memory/autoloop"


def program_name(n: int) -> str:
    """The name of the ``n``-th benchmark program."""
    return f"program-{n:04d}"


def program_text(n: int) -> str:
    """A realistic state file for program ``n`` (deterministic)."""
    iterations = 10 + (n * 7) % 40
    return synthetic_state(program_name(n), iterations, seed=n, agent_ranges=3 if n % 3 == 0 else 0)


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def _commit(ref: str, when: int, message: str, files: dict[str, bytes], *, first: bool) -> bytes:
    out = [
        f"commit {ref}\n".encode(),
        f"committer statefile bench <bench@statefile.invalid> {when} +0000\n".encode(),
        _data(message.encode()),
    ]
    if first:
        out.append(b"deleteall\n")
    for path, content in files.items():
        out.append(f"M 100644 inline {path}\n".encode() + _data(content))
    return b"".join(out)


def make_memory_remote(root: Path, programs: int, *, history: int = 100, extra: dict[str, str] | None = None) -> Path:
    """A bare repository ``root/remote.git``: ``main`` with a README, the memory branch with ``programs`` files.

    ``extra`` adds files (path → text) to the memory branch's first commit.  Its HEAD is ``main``, as a
    project's default branch is.
    """
    bare = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True, capture_output=True)
    texts = {f"{program_name(n)}.md": program_text(n) for n in range(programs)}
    texts.update(extra or {})
    when = int(time.time()) - 86_400
    stream = [_commit("refs/heads/main", when, "project", {"README.md": b"a project\n"}, first=True)]
    stream.append(_commit(f"refs/heads/{BRANCH}", when, "seed", {k: v.encode() for k, v in texts.items()}, first=True))
    names = sorted(texts)
    for step in range(history):
        path = names[(step * 37) % len(names)] if names else "note.md"
        texts[path] = texts.get(path, "") + f"\n- benchmark history line {step}\n"
        stream.append(
            _commit(f"refs/heads/{BRANCH}", when + step + 1, f"iteration {step}", {path: texts[path].encode()},
                    first=False)
        )  # fmt: skip
    subprocess.run(["git", "fast-import", "--quiet"], cwd=bare, input=b"".join(stream), check=True, capture_output=True)
    sh(bare, "gc", "-q")  # a served repository is packed, as a hosted one is
    return bare


def url(bare: Path) -> str:
    """A ``file://`` URL: git then negotiates and sends a pack as over a network (a plain path would hardlink)."""
    return bare.resolve().as_uri()


def runner_clone(bare: Path, dest: Path) -> Path:
    """A CI runner's checkout that has already fetched every branch (the memory branch as origin/…)."""
    subprocess.run(["git", "clone", "-q", url(bare), str(dest)], check=True, capture_output=True)
    return dest


def main_only_clone(bare: Path, dest: Path) -> Path:
    """A fresh CI checkout as actions/checkout makes it: main only, depth 1; the memory branch is not fetched."""
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--single-branch", "--branch", "main", url(bare), str(dest)],
        check=True,
        capture_output=True,
    )
    return dest
