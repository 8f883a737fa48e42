"""The one retry loop: pure logic, tested with a fake clock and a recording sleep."""

from __future__ import annotations

import random

from statefile.store.git.retry import Backoff, Outcome, retry


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_it_stops_at_the_first_done_and_counts_attempts() -> None:
    clock = FakeTime()
    outcomes = iter([Outcome.MOVED, Outcome.REJECTED, Outcome.DONE, Outcome.MOVED])
    tried = retry(lambda n: (next(outcomes), n), Backoff(10, 0.1, 4.0, 60.0), sleep=clock.sleep, clock=clock.clock)
    assert (tried.outcome, tried.value, tried.attempts) == (Outcome.DONE, 2, 3)
    assert len(clock.waits) == 2 and all(w >= 0 for w in clock.waits)


def test_it_gives_up_after_the_tries() -> None:
    clock = FakeTime()
    tried = retry(lambda n: (Outcome.LOCKED, n), Backoff(5, 0.01, 0.1, 60.0), sleep=clock.sleep, clock=clock.clock)
    assert (tried.outcome, tried.attempts) == (Outcome.LOCKED, 5)


def test_it_gives_up_when_the_time_is_spent_and_never_sleeps_past_it() -> None:
    clock = FakeTime()

    def attempt(n: int) -> tuple[Outcome, int]:
        clock.now += 1.0  # each attempt takes a second
        return Outcome.REJECTED, n

    tried = retry(attempt, Backoff(1000, 0.5, 4.0, 20.0), rng=random.Random(3), sleep=clock.sleep, clock=clock.clock)
    assert tried.outcome is Outcome.REJECTED and tried.attempts < 1000
    assert clock.now <= 20.0 + 1.0  # no wait starts that would end past the budget; the last attempt may run on


def test_waits_are_full_jitter_under_an_exponential_cap() -> None:
    backoff = Backoff(100, 0.1, 4.0, 600.0)
    rng = random.Random(7)
    assert backoff.delay(0, rng) == 0.0
    for attempt in range(1, 40):
        cap = min(4.0, 0.1 * 2 ** (attempt - 1))
        samples = [backoff.delay(attempt, rng) for _ in range(200)]
        assert all(0.0 <= s <= cap for s in samples)
        assert max(samples) > cap * 0.8 and min(samples) < cap * 0.2  # spread over the whole range
