"""Running the hostile cases: each command its own process under ``ulimit -v 1GiB`` and a 10 s timeout, checked.

What every command, on every hostile input, must never do (each a column of the summary):

- hang: still running after the timeout (the whole process group is killed);
- exit 70: statefile's "internal error", a bug by definition;
- print a traceback, die of a signal, or exit with a code docs/exit-codes.md does not document;
- fail with anything but one error line on stderr (none at all, or several; a note saying where the read came
  from may precede it), or with a line over 1,000 characters;
- print a secret: any credential string the cases planted, on stdout or stderr, whole or in part;
- mislead: accept what the case says must be refused (a gate that prints ok), or refuse what must succeed;
- leave damage behind: what a case checks after its commands (a moved branch, a file an injected command made).

A case that cannot be built or run at all is a harness error: counted, reported, and the run fails.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from statefile.errors import EXIT_CHECK_FAILED, EXIT_INTERNAL

STATEFILE = str(Path(sys.executable).with_name("statefile"))
MEMORY = 1 << 30
TIMEOUT = 10.0
#: Exit codes docs/exit-codes.md documents (0–8; 130 for an interrupted prompt).
DOCUMENTED = frozenset(range(9)) | {130}
LONGEST_LINE = 1000
_NOTES = ("statefile: note: ", "statefile: warning: ")
_PER_TARGET = re.compile(r"statefile: error: [\w.-]+: ")
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "statefile hostile",
    "GIT_AUTHOR_EMAIL": "hostile@statefile.invalid",
    "GIT_COMMITTER_NAME": "statefile hostile",
    "GIT_COMMITTER_EMAIL": "hostile@statefile.invalid",
}
#: The columns of the summary, in order, and what each counts.
COLUMNS = {
    "hang": "hangs",
    "exit 70": "exit-70s",
    "traceback": "tracebacks",
    "secret": "secrets leaked",
    "multi-line error": "multi-line errors",
    "silent failure": "silent failures",
    "overlong error": "overlong errors",
    "signal": "signals",
    "undocumented exit": "undocumented exits",
    "misleading": "misleading",
    "left behind": "left behind",
    "harness error": "harness errors",
}


@dataclass(frozen=True)
class Command:
    """One statefile invocation of a case.

    ``stdout`` is ``"pipe"`` (captured), ``"full"`` (``/dev/full``: every write fails with ENOSPC) or ``"gone"``
    (a pipe whose reader has already closed it, as ``statefile … | head -0``).  ``disk`` runs the command on a
    private tmpfs holding a copy of the case (Linux mount namespace): ``"full"`` fills it first, ``"read-only"``
    remounts it read-only.  ``refuse`` / ``succeed`` say what exit the input must give, where that is certain;
    ``shows``, a string the output must contain (a listing that must not skip what it cannot read).
    """

    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    stdin: str | None = None
    stdout: str = "pipe"
    disk: str | None = None
    refuse: bool = False
    succeed: bool = False
    shows: str | None = None
    cwd: Path | None = None


def cmd(*args: str, **kwargs: object) -> Command:
    """A :class:`Command` of ``args`` (options as keywords)."""
    return Command(tuple(args), **kwargs)  # type: ignore[arg-type]


@dataclass
class Setup:
    """A built case: where to run, what, with which environment; the secrets it planted; what to check after."""

    cwd: Path
    commands: list[Command]
    env: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    after: Callable[[], list[str]] | None = None
    cleanup: Callable[[], None] | None = None


@dataclass(frozen=True)
class Case:
    """A hostile input: its name, the issue-15 case it keeps (``#5``, ``absurd``), and how to build it."""

    name: str
    keeps: str
    build: Callable[[Path], Setup]
    ci: bool = False


@dataclass
class Result:
    """One command's run: exit code (``None`` after a timeout), output, time, and what it violated."""

    case: str
    args: tuple[str, ...]
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    violations: list[str] = field(default_factory=list)


# -- running ------------------------------------------------------------------------------------------------------


def _namespace() -> list[str] | None:
    """``unshare --mount`` (mapping root when not root) when a tmpfs can be mounted in a private namespace."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    prefix = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--mount", "--map-root-user"]
    with tempfile.TemporaryDirectory() as folder:
        probe = subprocess.run(
            [*prefix, "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0"', folder], capture_output=True, check=False
        )
    return prefix if probe.returncode == 0 else None


NAMESPACE = _namespace()

# Runs in the private mount namespace: the case's folder is copied onto a small tmpfs mounted over it (so every
# path stays the same), then the tmpfs is filled or made read-only, then statefile runs.
_DISK = r"""
set -e
stage=$(mktemp -d)
cp -a "$HOSTILE_ROOT/." "$stage/"
mount -t tmpfs -o size=16m tmpfs "$HOSTILE_ROOT"
cp -a "$stage/." "$HOSTILE_ROOT/"
rm -rf "$stage"
case "$HOSTILE_DISK" in
  full) "$HOSTILE_PYTHON" -c 'import sys
f = open(sys.argv[1], "wb")
try:
    while True:
        f.write(b"x" * 65536); f.flush()
except OSError:
    pass' "$HOSTILE_ROOT/.fill" ;;
  read-only) mount -o remount,ro "$HOSTILE_ROOT" ;;
esac
cd "$HOSTILE_CWD"
exec "$@"
"""


def _limits(memory: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def base_env(root: Path) -> dict[str, str]:
    """The environment every command starts from: no statefile or git settings from outside, a fresh HOME, an
    editor that saves the file as it is, a git identity, no colour."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STATEFILE_", "GIT_", "GH_", "GITHUB_"))}
    env.pop("VISUAL", None)
    home = root / ".home"
    home.mkdir(exist_ok=True)
    env.update(GIT_IDENTITY)
    # Temporary files too (an edit's saved text) stay in the case's folder, removed with it, not in the machine's /tmp.
    (home / "tmp").mkdir(exist_ok=True)
    env.update(HOME=str(home), NO_COLOR="1", EDITOR="true", GIT_CONFIG_NOSYSTEM="1", LC_ALL="C.UTF-8",
               TMPDIR=str(home / "tmp"))  # fmt: skip
    return env


def run_command(
    command: Command, setup: Setup, root: Path, *, timeout: float = TIMEOUT, memory: int = MEMORY
) -> tuple[int | None, str, str, float]:
    """Run one command as its own process group under the limits: (exit code or None on timeout, out, err, s)."""
    env = {**base_env(root), **setup.env, **command.env}
    cwd = command.cwd or setup.cwd
    argv = [STATEFILE, *command.args]
    if command.disk is not None:
        if NAMESPACE is None:
            raise RuntimeError("no private mount namespace here")
        argv = [*NAMESPACE, "sh", "-c", _DISK, "sh", *argv]
        env.update(HOSTILE_ROOT=str(root), HOSTILE_DISK=command.disk, HOSTILE_CWD=str(cwd),
                   HOSTILE_PYTHON=sys.executable)  # fmt: skip
    read_end = write_end = None
    sink: int | IO[bytes] = subprocess.PIPE
    if command.stdout == "full":
        sink = open("/dev/full", "wb")  # noqa: SIM115 - closed below, after the process started
    elif command.stdout == "gone":
        read_end, write_end = os.pipe()
        os.close(read_end)
        sink = write_end
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if command.stdin is not None else subprocess.DEVNULL,
        stdout=sink,
        stderr=subprocess.PIPE,
        preexec_fn=_limits(memory),
        start_new_session=True,
    )
    if write_end is not None:
        os.close(write_end)
    elif not isinstance(sink, int):
        sink.close()
    code: int | None
    try:
        out, err = proc.communicate(command.stdin.encode() if command.stdin is not None else None, timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    seconds = time.monotonic() - start
    return code, (out or b"").decode("utf-8", "replace"), (err or b"").decode("utf-8", "replace"), seconds


def violations(command: Command, code: int | None, out: str, err: str, secrets: Iterable[str]) -> list[str]:
    """What this run did that no hostile input may cause (keys of :data:`COLUMNS`, with a detail)."""
    found: list[str] = []
    if code is None:
        return ["hang"]
    if code == EXIT_INTERNAL:
        found.append("exit 70")
    if "Traceback (most recent call last)" in out + err:
        found.append("traceback")
    if code < 0:
        found.append(f"signal: {signal.Signals(-code).name if -code in signal.valid_signals() else -code}")
    elif code not in DOCUMENTED:
        found.append(f"undocumented exit: {code}")
    leaked = sorted({s for s in secrets if s and (s in out or s in err)})
    if leaked:
        found.append(f"secret: {', '.join(leaked)}")
    # A note saying where a read came from ("read the local branch, 4 commits ahead of origin") may come before the
    # error: it is context, not a second error.  The error itself must be one line.
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(_NOTES)]
    if code == EXIT_CHECK_FAILED:
        # A gate's verdict (check): its report is the output, on stdout; it must say something.
        if not lines and not out.strip() and command.stdout == "pipe":
            found.append("silent failure")
    elif code != 0:
        if not lines and command.stdout == "pipe":
            found.append("silent failure")
        elif len(lines) > 1 and not all(_PER_TARGET.match(line) for line in lines):
            # `compact --all` / `repair --all` go on past a program that fails and name each at the end, one
            # line per program: several lines, each one complete.  Anything else is one line.
            found.append(f"multi-line error: {len(lines)} lines")
    if any(len(line) > LONGEST_LINE for line in lines):
        found.append(f"overlong error: {max(len(line) for line in lines):,} characters")
    if command.refuse and code == 0:
        found.append("misleading: accepted an input it must refuse")
    if command.succeed and code != 0:
        found.append(f"misleading: failed ({code}) where it must succeed")
    if command.shows is not None and command.shows not in out + err:
        found.append(f"misleading: {command.shows!r} not in the output")
    return found


def run_case(case: Case, *, keep: bool = False, timeout: float = TIMEOUT, memory: int = MEMORY) -> list[Result]:
    """Build ``case`` in a fresh temporary directory and run its commands in order; every result, checked."""
    label = re.sub(r"[^A-Za-z0-9.]+", "-", case.name)[:40]
    root = Path(tempfile.mkdtemp(prefix=f"hostile-{label}-")).resolve()
    results: list[Result] = []
    setup: Setup | None = None
    try:
        setup = case.build(root)
        secrets = (*setup.secrets, *SECRETS)
        for command in setup.commands:
            if command.disk is not None and NAMESPACE is None:
                continue
            code, out, err, seconds = run_command(command, setup, root, timeout=timeout, memory=memory)
            found = violations(command, code, out, err, secrets)
            results.append(Result(case.name, command.args, code, out, err, seconds, found))
        if setup.after is not None:
            for problem in setup.after():
                results.append(Result(case.name, ("(after)",), 0, "", "", 0.0, [f"left behind: {problem}"]))
    finally:
        if setup is not None and setup.cleanup is not None:
            setup.cleanup()
        if not keep:
            _remove(root)
    return results


def _remove(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            with_write = path.stat().st_mode | 0o700
            os.chmod(path, with_write)
    shutil.rmtree(root, ignore_errors=True)


# -- reporting ------------------------------------------------------------------------------------------------------


def column(violation: str) -> str:
    """The summary column a violation counts in."""
    return violation.split(":", 1)[0]


def summary(cases: Sequence[Case], results: Sequence[Result]) -> list[str]:
    """The summary table: cases, commands run, and each kind of violation."""
    counts = dict.fromkeys(COLUMNS, 0)
    for result in results:
        for violation in result.violations:
            counts[column(violation)] += 1
    commands = sum(1 for r in results if r.args not in (("(after)",), ("(harness)",)))
    head = ["cases", "commands run", *COLUMNS.values()]
    values = [str(len(cases)), str(commands), *(str(counts[k]) for k in COLUMNS)]
    return [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---:" for _ in head) + "|",
        "| " + " | ".join(values) + " |",
    ]


def describe(result: Result) -> str:
    """One violation report: case, command, exit, what, and the first line of stderr."""
    shown = " ".join(re.sub(r"\s", " ", a)[:60] + ("…" if len(a) > 60 else "") for a in result.args)
    first = (result.stderr.strip().splitlines() or [""])[0][:300]
    code = "timeout" if result.code is None else str(result.code)
    return f"{result.case}: statefile {shown} → {code}: {'; '.join(result.violations)}\n    {first}"


def main(argv: list[str] | None = None) -> int:
    """Run the cases (all, or those chosen), print each failure and the summary table; 1 on any violation."""
    from hostile.inputs import CASES  # the cases import this module

    parser = argparse.ArgumentParser(prog="python tests/hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="match", help="only cases whose name contains this (comma-separated)")
    parser.add_argument("--ci", action="store_true", help="only the cases the CI test runs")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every command and its exit")
    parser.add_argument("--keep", action="store_true", help="keep each case's temporary directory")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per command (default 10)")
    parser.add_argument("--memory", type=int, default=MEMORY, help="address-space limit in bytes (default 1 GiB)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="cases run side by side (default 1)")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if (not args.ci or c.ci)]
    if args.match:
        cases = [c for c in cases if any(m in c.name for m in args.match.split(","))]
    if args.list:
        for case in cases:
            print(f"{case.keeps:<8} {case.name}{'  (ci)' if case.ci else ''}")
        return 0
    if NAMESPACE is None:
        print("note: no private mount namespace here; the full-disk and read-only commands are skipped")
    os.environ.update(GIT_IDENTITY)  # the builders commit with git too
    started = time.monotonic()
    results: list[Result] = []

    def one(case: Case) -> list[Result]:
        try:
            return run_case(case, keep=args.keep, timeout=args.timeout, memory=args.memory)
        except Exception as exc:  # a case that cannot be built or run is reported, and the others still run
            return [Result(case.name, ("(harness)",), 0, "", "", 0.0, [f"harness error: {type(exc).__name__}: {exc}"])]

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(one, case): case for case in cases}
        for future in concurrent.futures.as_completed(futures):
            case, ran = futures[future], future.result()
            results += ran
            bad = [r for r in ran if r.violations]
            print(f"{'FAIL' if bad else 'ok  '} {case.keeps:<8} {case.name} ({len(ran)} commands)", flush=True)
            for result in ran if args.verbose else bad:
                if args.verbose and not result.violations:
                    print(f"    statefile {' '.join(result.args)[:100]} → {result.code} ({result.seconds:.1f} s)")
                else:
                    print("  " + describe(result), flush=True)
    print()
    slowest = max(results, key=lambda r: r.seconds, default=None)
    if slowest is not None:
        print(f"slowest command: {slowest.case}: statefile {' '.join(slowest.args)[:80]} ({slowest.seconds:.1f} s)")
    print(f"{len(results)} runs in {time.monotonic() - started:.0f} s, each under ulimit -v {args.memory:,} bytes "
          f"and a {args.timeout:g} s timeout\n")  # fmt: skip
    print("\n".join(summary(cases, results)))
    return 1 if any(r.violations for r in results) else 0


#: Credential strings the cases plant (in URLs, the environment, config files, hooks' and servers' replies); none
#: may ever be printed, whole or — for a password with a '/' or an '@' in it — either half.
TOKEN = "s3cr3tTOKENa1"
LEFT, RIGHT = "LeftHalf9x", "RightHalf9y"
AT_LEFT, AT_RIGHT = "AtLeft4e", "AtRight4r"
QUERY = "QueryToken7z"
GH_TOKEN = "ghp_FAKEtoken0123456789abcdefABCDEF0123"
TOML = "TomlSecret5q"
SCP = "ScpSecret3w"
KEY = "SummKey6u"
SECRETS = (TOKEN, LEFT, RIGHT, AT_LEFT, AT_RIGHT, QUERY, GH_TOKEN, TOML, SCP, KEY)
