"""One exception root (:class:`StatefileError`: one line on stderr, never a traceback) and the exit code each kind
of failure maps to (docs/exit-codes.md)."""

from __future__ import annotations

# Exit codes, in one place.  0 is success; 1 is "check found problems" (a gate failing, not a crash).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_BUDGET = 4
EXIT_CONFLICT = 5
EXIT_GIT = 6
EXIT_INVALID_DATA = 7
EXIT_ENVIRONMENT = 8
EXIT_INTERNAL = 70
#: Interrupted (Ctrl-C, SIGINT): 128 + the signal's number, as shells report it.
EXIT_INTERRUPTED = 130


class StatefileError(Exception):
    """Root of every error statefile raises deliberately.  ``exit_code`` is what the CLI exits with."""

    exit_code: int = EXIT_USAGE


class UsageError(StatefileError):
    """Bad arguments or configuration: a bad program name, an unknown config key, a non-numeric metric."""

    exit_code = EXIT_USAGE


class NotFoundError(StatefileError):
    """A program, iteration, repository or branch that was asked for does not exist."""

    exit_code = EXIT_NOT_FOUND


class BudgetError(StatefileError):
    """A file cannot be brought under its byte budget without touching maintainer-owned text."""

    exit_code = EXIT_BUDGET


class ConflictError(StatefileError):
    """A concurrent change won and retries ran out, or an iteration number is already taken."""

    exit_code = EXIT_CONFLICT


class GitError(StatefileError):
    """A git operation failed (fetch, push, ref update).  Messages never carry credentials."""

    exit_code = EXIT_GIT


class InvalidDataError(StatefileError):
    """Stored data cannot be read safely: invalid UTF-8, a symlink or submodule where a file should be."""

    exit_code = EXIT_INVALID_DATA


class EnvironmentFailure(StatefileError):
    """The machine refused a write or read (a full disk, a read-only folder); the data and arguments are fine."""

    exit_code = EXIT_ENVIRONMENT


class InterruptedWrite(StatefileError):
    """Ctrl-C after a write may have landed: the message says whether and how to look (not to record it twice)."""

    exit_code = EXIT_INTERRUPTED
