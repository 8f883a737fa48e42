"""The one retry loop: attempts whose outcome says whether to try again, with jittered exponential backoff,
bounded in tries and in time."""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")


class Outcome(enum.Enum):
    """How one attempt ended: DONE stops the loop; every other outcome waits and tries again."""

    DONE = "done"  # the commit landed, or there was nothing to do
    MOVED = "moved"  # a concurrent writer moved the ref between our read and our compare-and-swap
    LOCKED = "locked"  # a ref lock is held, by another git process or left by a killed one
    REJECTED = "rejected"  # the remote refused a non-fast-forward push: fetch, re-apply, push again
    REMOTE_LOCKED = "remote locked"  # the remote could not lock its ref (a concurrent push, or a stale lock there)
    UNANSWERED = "unanswered"  # the remote could not be read (the connection just broke)

    @property
    def done(self) -> bool:
        return self is Outcome.DONE


class Backoff(NamedTuple):
    """How long to wait between tries: "full jitter" exponential backoff, bounded in tries and total time."""

    tries: int
    first: float
    cap: float
    budget: float

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The wait before try number ``attempt`` (0-based; 0 for the first)."""
        return 0.0 if attempt < 1 else rng.uniform(0.0, min(self.cap, self.first * 2 ** min(attempt - 1, 30)))


@dataclass(frozen=True)
class Tried(Generic[T]):
    """What :func:`retry` ended with: the last attempt's outcome and value, and how many attempts ran."""

    outcome: Outcome
    value: T
    attempts: int


def retry(
    attempt: Callable[[int], tuple[Outcome, T]],
    backoff: Backoff,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Tried[T]:
    """Call ``attempt(n)`` until its outcome is :attr:`Outcome.DONE`, or the tries or the time run out."""
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
