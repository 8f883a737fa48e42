"""The floor under a local ``statefile record`` for any tool on statefile's stack (run by bench_git.py).

    python benchmarks/record_floor.py     (in a repository whose memory branch holds perf.md)

What every such tool pays, and nothing of statefile's own: the interpreter, ``import click`` and
``import markdown_it`` (the declared CLI and markdown dependencies), one markdown parse of the file, one line added,
and the same six git processes ``statefile record`` starts, in the same order (``rev-parse``, ``for-each-ref``,
``cat-file --batch``, ``fast-import``, ``commit-tree``, ``update-ref`` with compare-and-swap).  Its ratio to the
naive flow, measured in the same run, is the best ratio ``statefile record`` could reach on this stack.
"""

from __future__ import annotations

import subprocess
import time

import click  # noqa: F401 - its import time is part of the floor
import markdown_it

BRANCH = "memory/autoloop"
SCRATCH = "refs/statefile-floor/scratch"


def git(*args: str, data: bytes | None = None) -> bytes:
    """One git process; its output."""
    return subprocess.run(["git", *args], input=data, capture_output=True, check=True).stdout


def main() -> None:
    """Add one line to perf.md on the branch, through the same plumbing statefile's record uses."""
    git("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel")
    tip = git("for-each-ref", "--format=%(objectname)", f"refs/heads/{BRANCH}").decode().strip()
    header, rest = git("cat-file", "--batch", data=f"{tip}:perf.md\n".encode()).split(b"\n", 1)
    text = rest[: int(header.split()[2])].decode()
    markdown_it.MarkdownIt("commonmark").parse(text)
    blob = f"{text}- floor line {time.time()}\n".encode()
    stream = f"commit {SCRATCH}\ncommitter f <f@statefile.invalid> 0 +0000\ndata 0\nfrom {tip}\n"
    stream += f"M 100644 inline perf.md\ndata {len(blob)}\n"
    tail = f'\nls ""\nreset {SCRATCH}\ndone\n'.encode()  # the new top tree's id, and no ref left set
    tree = git("fast-import", "--quiet", "--done", "--cat-blob-fd=1", data=stream.encode() + blob + tail).split()[2]
    commit = git("commit-tree", "--no-gpg-sign", tree.decode(), "-p", tip, data=b"floor").decode().strip()
    git("update-ref", "--no-deref", f"refs/heads/{BRANCH}", commit, tip)


if __name__ == "__main__":
    main()
