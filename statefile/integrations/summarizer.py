"""``--summarizer "CMD"``: let an outside command (often an LLM call) write the one-line summary of a range.

The command gets the folded entries as JSON on stdin (a list of objects: number, when, status, metric, change,
notes) and prints one line.  Its line is used only when the command exits 0 within the timeout and prints a
single non-empty line shorter than the cap, without control characters; in every other case the callable returns
``None`` and compaction keeps its own deterministic summary.  It never raises: a summarizer is optional help, and
a broken one must not break a run.

The command is split with :func:`shlex.split` and run directly, never through a shell.  It runs in its own
process group, so a timeout kills whatever it started too.  Its output is read with a bound (a command that
prints megabytes is stopped as soon as it is over the cap), and the last 2 KB of its stderr are kept to explain
a failure (``last_reason``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
import unicodedata
from typing import IO, Any

from statefile.defaults import SUMMARIZER_TIMEOUT, SUMMARY_CAP
from statefile.errors import UsageError
from statefile.numbers import number_text, plural

_STDERR_TAIL = 2048


class CommandSummarizer:
    """A summarizer that runs a command; call it with the folded entries.  ``last_reason`` says why the last
    call returned ``None`` (``None`` after a usable answer)."""

    def __init__(self, argv: list[str], *, timeout: float, cap: int) -> None:
        self.argv = argv
        self.timeout = timeout
        self.cap = cap
        self.last_reason: str | None = None
        # The update function that calls us is re-run when a concurrent write wins (Store.update): the same folded
        # entries then get the same answer without running the command again.
        self._answers: dict[bytes, tuple[str | None, str | None]] = {}

    def __repr__(self) -> str:
        return f"CommandSummarizer({shlex.join(self.argv)!r}, timeout={self.timeout:g}, cap={self.cap})"

    def __call__(self, entries: list[dict[str, Any]]) -> str | None:
        """The command's one-line summary of ``entries``, or ``None`` (see the module docstring)."""
        try:
            line, reason = self._summarize(entries)
        except Exception as exc:  # the contract is "never raises": anything unexpected means "use ours"
            line, reason = None, f"summarizer failed: {type(exc).__name__}: {exc}"
        self.last_reason = reason
        return line

    def _summarize(self, entries: list[dict[str, Any]]) -> tuple[str | None, str | None]:
        payload = _payload(entries)
        if payload not in self._answers:
            self._answers[payload] = self._answer(payload)
        return self._answers[payload]

    def _answer(self, payload: bytes) -> tuple[str | None, str | None]:
        output, reason = self._run(payload)
        if output is None:
            return None, reason
        text = output.decode("utf-8", "replace").strip()
        if not text:
            return None, "printed nothing"
        if "\n" in text or "\r" in text:
            return None, "printed more than one line"
        if any(unicodedata.category(ch) == "Cc" and ch != "\t" for ch in text):
            return None, "printed control characters"
        if len(text) >= self.cap:
            return None, f"printed {plural(len(text), 'character')}; the cap is {number_text(self.cap)}"
        return text, None

    def _run(self, payload: bytes) -> tuple[bytes | None, str | None]:
        posix = os.name == "posix"
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=posix,
            )
        except OSError as exc:
            return None, f"cannot start {self.argv[0]!r}: {exc.strerror or exc}"
        try:
            if not posix:  # pragma: no cover - selectors cannot wait on pipes on Windows
                try:
                    out, err = proc.communicate(payload, timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    return None, f"timed out after {self.timeout:g}s"
                limit_hit = len(out) > 4 * self.cap + 8
                return (
                    (None, f"printed more than {plural(self.cap, 'character')}")
                    if limit_hit
                    else self._finish(proc, out, err)
                )
            return self._run_posix(proc, payload)
        finally:
            # Also after a normal exit: anything the command left running in its group is a leftover, and it may
            # hold our pipes open.  (stdin is the writer thread's to close; closing it here could wait on it.)
            _kill(proc)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()

    def _run_posix(self, proc: subprocess.Popen[bytes], payload: bytes) -> tuple[bytes | None, str | None]:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        # A UTF-8 character is at most 4 bytes: past this many bytes the line is certainly over the cap.
        limit = 4 * self.cap + 8
        deadline = time.monotonic() + self.timeout
        # Writing in a thread: a command that never reads stdin must not block us while we watch the clock.
        threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True).start()
        out = bytearray()
        err = bytearray()
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ, out)
            selector.register(proc.stderr, selectors.EVENT_READ, err)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None, f"timed out after {self.timeout:g}s"
                for key, _ in selector.select(remaining):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    buffer: bytearray = key.data
                    buffer += chunk
                    if buffer is out and len(out) > limit:
                        return None, f"printed more than {plural(self.cap, 'character')}"
                    if buffer is err and len(err) > _STDERR_TAIL:
                        del err[: len(err) - _STDERR_TAIL]
        try:
            proc.wait(max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            return None, f"timed out after {self.timeout:g}s"
        return self._finish(proc, bytes(out), bytes(err))

    def _finish(self, proc: subprocess.Popen[bytes], out: bytes, err: bytes) -> tuple[bytes | None, str | None]:
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()
            detail = f": {tail[-1][:200]}" if tail else ""
            return None, f"exited with status {proc.returncode}{detail}"
        return out, None


def _payload(entries: list[dict[str, Any]]) -> bytes:
    try:
        return json.dumps(entries, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        # Text read from undecodable bytes holds lone surrogates; escaped JSON is still valid for any reader.
        return json.dumps(entries, ensure_ascii=True, default=str).encode("ascii")


def _feed(stream: IO[bytes], payload: bytes) -> None:
    # A command may exit (or be killed) without reading everything: its answer still counts.
    with contextlib.suppress(OSError, ValueError):
        stream.write(payload)
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command's whole process group (POSIX) or the command, and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.poll() is None:  # pragma: no cover
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def command_summarizer(cmd: str, *, timeout: float = SUMMARIZER_TIMEOUT, cap: int = SUMMARY_CAP) -> CommandSummarizer:
    """A summarizer callable that runs ``cmd`` (see the module docstring).

    Raises :class:`UsageError` here, once, for a command that cannot be split (unbalanced quotes), an empty
    command, a non-positive timeout or a cap under 1; the returned callable itself never raises.
    """
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise UsageError(f"cannot parse --summarizer {cmd!r} ({exc}); check its quotes") from None
    if not argv:
        raise UsageError("empty --summarizer command; give the command to run, e.g. --summarizer 'llm-summarize'")
    if not timeout > 0:
        raise UsageError(f"summarizer timeout must be positive (got {timeout})")
    if cap < 1:
        raise UsageError(f"summarizer cap must be at least 1 (got {cap})")
    return CommandSummarizer(argv, timeout=timeout, cap=cap)
