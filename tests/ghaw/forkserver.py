"""A ``statefile`` on PATH that starts in milliseconds: the real command, forked from a process that imported it.

The end-to-end tests run the shipped component's shell scripts, which call ``statefile`` a few hundred times.
Starting Python and importing statefile costs ~0.3-1 s per call on a loaded 2-core machine, which would put a
40-round run far over the suite's time budget.  So the ``statefile`` these scripts find is a small bash shim
(:data:`SHIM`) that hands its argument vector, working directory and environment to this server; the server
``fork()``s — the child is a fresh process with statefile already imported — and the child runs the console entry
point ``statefile.cli.main`` with exactly those, its stdout and stderr going to files the shim prints, its exit
status going back as the shim's.  Everything statefile does (git processes, files, locks, exit codes) is what the
real command does; only interpreter start-up and imports are shared.  ``STATEFILE_E2E_PROCESSES=1`` makes the
tests use the installed console script instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

SHIM = r"""#!/usr/bin/env bash
# statefile, served by the tests' fork server (tests/ghaw/forkserver.py): same argv, cwd, environment, exit code.
set -u
req=$(mktemp -d "${TMPDIR:-/tmp}/statefile-req.XXXXXX")
mkfifo "$req/done"
printf '%s\0' "$@" > "$req/argv"
env -0 > "$req/env"
printf '%s' "$PWD" > "$req/cwd"
exec 3<>"$req/done"   # opened read-write: no blocking open, and a time limit on the answer below
printf '%s\n' "$req" > "__FIFO__"
if ! read -t 600 -r code <&3; then echo "statefile (test fork server): no answer in 600 s" >&2; code=70; fi
exec 3<&-
cat "$req/stdout"
cat "$req/stderr" >&2
rm -rf "$req"
exit "$code"
"""


class ForkServer:
    """Start with ``with ForkServer(folder) as server:``; ``server.bin_dir`` holds the shim ``statefile``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fifo = folder / "requests"
        self.bin_dir = folder / "bin"
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ForkServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        os.mkfifo(self.fifo)
        self.bin_dir.mkdir()
        shim = self.bin_dir / "statefile"
        shim.write_text(SHIM.replace("__FIFO__", str(self.fifo)))
        shim.chmod(0o755)
        tests = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))}
        self._proc = subprocess.Popen([sys.executable, "-m", "ghaw.forkserver", str(self.fifo)], env=env)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is not None:
            with open(self.fifo, "w") as fh:
                fh.write("STOP\n")
            self._proc.wait(timeout=30)


def _child(request: Path) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the child's own git processes must be waitable
    code = 70
    try:
        argv = [a.decode("utf-8", "surrogateescape") for a in (request / "argv").read_bytes().split(b"\0")[:-1]]
        env = dict(
            item.decode("utf-8", "surrogateescape").split("=", 1)
            for item in (request / "env").read_bytes().split(b"\0")
            if b"=" in item
        )
        os.chdir((request / "cwd").read_text())
        os.environ.clear()
        os.environ.update(env)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            handle = os.open(request / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(handle, fd)
            os.close(handle)
        sys.argv = ["statefile", *argv]
        from statefile.cli import main

        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        with open(request / "done", "w") as fh:
            fh.write(f"{code}\n")
        os._exit(0)


def serve(fifo: Path) -> None:
    """Answer requests until a ``STOP`` line; each request runs in its own forked child."""
    import statefile.cli
    import statefile.cli.read
    import statefile.cli.write  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    # Opened for reading *and* writing: the server itself keeps a writer, so the FIFO never reaches end-of-file and
    # is never closed and reopened — a close would discard a request written in between (a lost request, a shim
    # waiting forever).
    with os.fdopen(os.open(fifo, os.O_RDWR), "r") as fh:
        for line in fh:
            request = line.strip()
            if request == "STOP":
                return
            if request and os.fork() == 0:
                _child(Path(request))


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
