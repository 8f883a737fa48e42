"""The one retry loop: attempts whose outcome says whether to try again, with jittered exponential backoff.

Every loop in the git store that waits for another writer (the compare-and-swap of a write, a fetch racing
another fetch in the same clone, moving the local branch after a push) goes through :func:`retry`, bounded both by
a number of tries and by a total time.
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")


class Outcome(enum.Enum):
    """How one attempt ended."""

    #: Finished: the commit landed, or there was nothing to do.  Stop.
    DONE = "done"
    #: The ref moved between our read and our compare-and-swap (a concurrent writer won).  Re-read, try again.
    MOVED = "moved"
    #: A ref lock is held: by another git process right now, or left behind by a killed one.  Wait, try again.
    LOCKED = "locked"
    #: The remote refused a non-fast-forward push (someone pushed first).  Fetch, re-apply, push again.
    REJECTED = "rejected"
    #: The remote could not lock its ref (a concurrent push, or a stale lock file on the remote).  Try again.
    REMOTE_LOCKED = "remote locked"
    #: The remote could not be read (unreachable for now: the connection just broke).  Wait, ask again.
    UNANSWERED = "unanswered"

    @property
    def done(self) -> bool:
        """Whether this outcome ends the loop."""
        return self is Outcome.DONE


class Backoff(NamedTuple):
    """How long to wait between tries: "full jitter" exponential backoff, bounded in tries and total time.

    Before try ``n`` (``n >= 1``) the wait is uniform in ``[0, min(cap, first · 2^(n-1))]``: writers that collided
    spread out instead of colliding again in step, and the mean wait grows with the contention they see.
    No try starts after ``budget`` seconds from the first.
    """

    tries: int
    first: float
    cap: float
    budget: float

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The wait before try number ``attempt`` (0-based; 0 for the first)."""
        if attempt < 1:
            return 0.0
        return rng.uniform(0.0, min(self.cap, self.first * 2 ** min(attempt - 1, 30)))


class Tried(Generic[T]):
    """What :func:`retry` ended with: the last attempt's outcome and value, and how many attempts ran."""

    __slots__ = ("attempts", "outcome", "value")

    def __init__(self, outcome: Outcome, value: T, attempts: int) -> None:
        self.outcome = outcome
        self.value = value
        self.attempts = attempts


def retry(
    attempt: Callable[[int], tuple[Outcome, T]],
    backoff: Backoff,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Tried[T]:
    """Call ``attempt(n)`` until its outcome is :attr:`Outcome.DONE`, or the tries or the time run out.

    Returns the last attempt's outcome (``DONE`` or why it gave up), its value, and the number of attempts.
    """
    rng = rng or random.Random()
    start = clock()
    outcome, value = attempt(0)
    count = 1
    while not outcome.done and count < backoff.tries:
        wait = backoff.delay(count, rng)
        if clock() - start + wait > backoff.budget:
            break
        sleep(wait)
        outcome, value = attempt(count)
        count += 1
    return Tried(outcome, value, count)
