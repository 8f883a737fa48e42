"""``--summarizer "CMD"``: an outside command (often an LLM call) writes the one-line summary of a range.

It reads the folded entries as JSON on stdin; its line is used only when it exits 0 in time with one non-empty line
under the cap without control characters, else compaction keeps its own.  No shell, its own process group (a timeout
kills what it started too), its output read with a bound."""

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
from dataclasses import KW_ONLY, dataclass, field
from typing import IO, Any

from statefile.defaults import SUMMARIZER_TIMEOUT, SUMMARY_CAP
from statefile.errors import UsageError
from statefile.numbers import number_text, plural


@dataclass(repr=False)
class CommandSummarizer:
    """Call it with the folded entries; ``last_reason`` says why the last call returned ``None``."""

    argv: list[str]
    _: KW_ONLY
    timeout: float
    cap: int
    last_reason: str | None = None
    # Store.update re-runs its function after losing a race: the same entries then get the same answer.
    _answers: dict[bytes, tuple[str | None, str | None]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"CommandSummarizer({shlex.join(self.argv)!r}, timeout={self.timeout:g}, cap={self.cap})"

    def __call__(self, entries: list[dict[str, Any]]) -> str | None:
        """The command's one-line summary of ``entries``, or ``None`` (see the module docstring)."""
        try:
            try:
                payload = json.dumps(entries, ensure_ascii=False, default=str).encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates from undecodable bytes: escaped JSON is valid for any reader
                payload = json.dumps(entries, ensure_ascii=True, default=str).encode("ascii")
            if payload not in self._answers:
                self._answers[payload] = self._answer(payload)
            line, self.last_reason = self._answers[payload]
        except Exception as exc:  # the contract is "never raises": anything unexpected means "use ours"
            line, self.last_reason = None, f"summarizer failed: {type(exc).__name__}: {exc}"
        return line

    def _answer(self, payload: bytes) -> tuple[str | None, str | None]:
        pipe = subprocess.PIPE
        try:
            proc = subprocess.Popen(self.argv, stdin=pipe, stdout=pipe, stderr=pipe, start_new_session=True)
        except OSError as exc:
            return None, f"cannot start {self.argv[0]!r}: {exc.strerror or exc}"
        try:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            limit = 4 * self.cap + 8  # a UTF-8 character is at most 4 bytes: past this the line is over the cap
            deadline = time.monotonic() + self.timeout
            timed_out = None, f"timed out after {self.timeout:g}s"

            def feed(stream: IO[bytes]) -> None:  # a command may exit without reading everything: its answer counts
                with contextlib.suppress(OSError, ValueError), stream:  # closed even when the write fails
                    stream.write(payload)

            # A command that never reads stdin must not block us while we watch the clock.
            threading.Thread(target=feed, args=(proc.stdin,), daemon=True).start()
            out, err = bytearray(), bytearray()
            with selectors.DefaultSelector() as selector:
                selector.register(proc.stdout, selectors.EVENT_READ, out)
                selector.register(proc.stderr, selectors.EVENT_READ, err)
                while selector.get_map():
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return timed_out
                    for key, _ in selector.select(remaining):
                        key.data.extend(chunk := os.read(key.fd, 65536))
                        if not chunk:
                            selector.unregister(key.fileobj)
                        if len(out) > limit:
                            return None, f"printed more than {plural(self.cap, 'character')}"
                        del err[:-2048]
            try:
                proc.wait(max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                return timed_out
            if proc.returncode != 0:
                tail = err.decode("utf-8", "replace").strip().splitlines()
                return None, f"exited with status {proc.returncode}" + (f": {tail[-1][:200]}" if tail else "")
        finally:
            # Also after a normal exit: what it left running may hold our pipes open (stdin is the writer thread's).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
            for stream in filter(None, (proc.stdout, proc.stderr)):
                with contextlib.suppress(OSError):
                    stream.close()
        text = out.decode("utf-8", "replace").strip()
        checks = [
            (not text, "printed nothing"),
            ("\n" in text or "\r" in text, "printed more than one line"),
            (any(unicodedata.category(ch) == "Cc" and ch != "\t" for ch in text), "printed control characters"),
            (len(text) >= self.cap, f"printed {plural(len(text), 'character')}; the cap is {number_text(self.cap)}"),
        ]
        return next(((None, why) for failed, why in checks if failed), (text, None))


def command_summarizer(cmd: str, *, timeout: float = SUMMARIZER_TIMEOUT, cap: int = SUMMARY_CAP) -> CommandSummarizer:
    """A summarizer that runs ``cmd``; a bad command, timeout or cap is a UsageError here: the callable never raises."""
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
