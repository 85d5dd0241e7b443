"""Ordered fallback chains (a race without hedging) and retry policies."""

from __future__ import annotations

import math

import pytest
import trio
from trio.testing import MockClock

from streams.fallback import AllAttemptsFailed, Outcome, RaceAborted, RetryPolicy
from streams.race import race
from tests.streams.fakes import Step, Upstreams, is_retryable


@pytest.mark.parametrize(
    ("policy", "delays"),
    [
        (RetryPolicy(), [0.0, 0.0]),
        (RetryPolicy(max_attempts=4, initial_delay=0.1), [0.0, 0.0, 0.1, 0.2, 0.4]),
        (RetryPolicy(4, initial_delay=1, multiplier=3, max_delay=5), [0.0, 0.0, 1, 3, 5]),
        (RetryPolicy(3, initial_delay=0.5, multiplier=1), [0.0, 0.0, 0.5, 0.5]),
    ],
)
def test_retry_policy_delays(policy: RetryPolicy, delays: list[float]) -> None:
    assert [policy.delay_before(n) for n in range(len(delays))] == delays


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"initial_delay": -1},
        {"max_delay": -0.5},
        {"multiplier": 0.5},
    ],
)
def test_retry_policy_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_default_policy_tries_once() -> None:
    assert RetryPolicy().max_attempts == 1
    assert RetryPolicy().max_delay == math.inf


async def test_sequential_chain_moves_on_after_each_failure(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(0.5, "retryable")], "b": [Step(1)], "c": [Step(0)]})
    won = await race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable)
    assert (trio.current_time(), won.candidate) == (1.5, "b")
    ups.assert_all_closed_but(won.value)
    assert ups.starts() == [("a", 1, 0), ("b", 1, 0.5)]
    assert [a.outcome for a in won.attempts] == [Outcome.FAILED, Outcome.WON, Outcome.NOT_STARTED]


async def test_without_hedging_a_slow_candidate_is_waited_for(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(30)], "b": [Step(0)]})
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable)
    assert (trio.current_time(), won.candidate) == (30, "a")
    assert ups.starts() == [("a", 1, 0)]


async def test_retries_back_off_then_move_on(autojump_clock: MockClock) -> None:
    # a fails at 0.5, waits 0.1, fails again at 1.1, waits 0.2, fails at 1.8: b starts then.
    ups = Upstreams({"a": [Step(0.5, "retryable")] * 3, "b": [Step(1)]})
    policy = RetryPolicy(max_attempts=3, initial_delay=0.1, multiplier=2)
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable, retry=policy)
    assert (trio.current_time(), won.candidate) == (2.8, "b")
    assert ups.starts() == [("a", 1, 0), ("a", 2, 0.6), ("a", 3, 1.3), ("b", 1, 1.8)]
    assert [(a.candidate, a.try_number, a.outcome) for a in won.attempts] == [
        ("a", 1, Outcome.FAILED),
        ("a", 2, Outcome.FAILED),
        ("a", 3, Outcome.FAILED),
        ("b", 1, Outcome.WON),
    ]
    ups.assert_all_closed_but(won.value)


async def test_a_retry_can_win(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(0.5, "retryable"), Step(0.5)], "b": [Step(0)]})
    policy = RetryPolicy(max_attempts=2, initial_delay=0.25)
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable, retry=policy)
    assert (trio.current_time(), won.candidate) == (1.25, "a")
    assert won.value.try_number == 2
    ups.assert_all_closed_but(won.value)


async def test_retry_policy_per_candidate(autojump_clock: MockClock) -> None:
    policies = {"a": RetryPolicy(max_attempts=2, initial_delay=1), "b": RetryPolicy()}
    ups = Upstreams({"a": [Step(0, "retryable")] * 2, "b": [Step(0, "retryable")]})
    with pytest.raises(AllAttemptsFailed) as caught:
        await race(["a", "b"], ups.attempt, is_retryable=is_retryable, retry=policies.__getitem__)
    assert trio.current_time() == 1
    assert ups.starts() == [("a", 1, 0), ("a", 2, 1), ("b", 1, 1)]
    assert len(caught.value.errors) == 3


async def test_non_retryable_failure_is_not_retried(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(0.5, "fatal")], "b": [Step(0)]})
    with pytest.raises(RaceAborted):
        await race(["a", "b"], ups.attempt, is_retryable=is_retryable, retry=RetryPolicy(3, 0.1))
    assert trio.current_time() == 0.5
    assert ups.starts() == [("a", 1, 0)]


async def test_hedge_overlaps_a_candidates_retries(autojump_clock: MockClock) -> None:
    # The hedge timer runs from a candidate's first try: b starts at 1 while a is still
    # backing off, and b's answer cancels a's pending retry.
    ups = Upstreams({"a": [Step(0.75, "retryable"), Step(5)], "b": [Step(0.5)]})
    won = await race(
        ["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1, retry=RetryPolicy(2, 0.5)
    )
    assert (trio.current_time(), won.candidate) == (1.5, "b")
    assert ups.starts() == [("a", 1, 0), ("b", 1, 1), ("a", 2, 1.25)]
    assert ups.closes()[("a", 2)] == 1.5
    ups.assert_all_closed_but(won.value)


async def test_caller_deadline_during_a_backoff(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(0.5, "retryable"), Step(0)]})
    with trio.move_on_after(1):
        await race(["a"], ups.attempt, is_retryable=is_retryable, retry=RetryPolicy(2, 10))
        raise AssertionError("no winner expected")  # pragma: no cover
    assert trio.current_time() == 1
    assert ups.starts() == [("a", 1, 0)]
    ups.assert_all_closed_but()
