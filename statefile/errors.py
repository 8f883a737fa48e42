"""One exception root (:class:`StatefileError`: one line on stderr, never a traceback) and the exit code each kind
of failure maps to (docs/exit-codes.md)."""

from __future__ import annotations

from typing import Any

# 0 is success; 1 is "check found problems" (a gate failing, not a crash); 130 is Ctrl-C (128 + SIGINT, as shells).
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_BUDGET = 4
EXIT_CONFLICT = 5
EXIT_GIT = 6
EXIT_INVALID_DATA = 7
EXIT_ENVIRONMENT = 8
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class StatefileError(Exception):
    """Root of every deliberate error; the CLI exits with its ``exit_code`` (a subclass sets it with ``exit_code=``)."""

    exit_code: int = EXIT_USAGE

    def __init_subclass__(cls, exit_code: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if exit_code is not None:
            cls.exit_code = exit_code


class UsageError(StatefileError, exit_code=EXIT_USAGE):
    """Bad arguments or configuration: a bad program name, an unknown config key, a non-numeric metric."""


class NotFoundError(StatefileError, exit_code=EXIT_NOT_FOUND):
    """A program, iteration, repository or branch that was asked for does not exist."""


class BudgetError(StatefileError, exit_code=EXIT_BUDGET):
    """A file cannot be brought under its byte budget without touching maintainer-owned text."""


class ConflictError(StatefileError, exit_code=EXIT_CONFLICT):
    """A concurrent change won and retries ran out, or an iteration number is already taken."""


class GitError(StatefileError, exit_code=EXIT_GIT):
    """A git operation failed (fetch, push, ref update).  Messages never carry credentials."""


class InvalidDataError(StatefileError, exit_code=EXIT_INVALID_DATA):
    """Stored data cannot be read safely: invalid UTF-8, a symlink or submodule where a file should be."""


class EnvironmentFailure(StatefileError, exit_code=EXIT_ENVIRONMENT):
    """The machine refused a write or read (a full disk, a read-only folder); the data and arguments are fine."""


class InterruptedWrite(StatefileError, exit_code=EXIT_INTERRUPTED):
    """Ctrl-C after a write may have landed: the message says whether and how to look (not to record it twice)."""
