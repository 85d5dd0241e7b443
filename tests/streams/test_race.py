"""The race: staggered (hedged) starts, one winner, every loser cancelled and closed.

Shaped like trio's own tests of `open_tcp_stream`: scripted fakes, `autojump_clock`,
exact virtual times, and a check that nothing the race opened was left open.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import trio
from trio.testing import MockClock

from streams.fallback import AllAttemptsFailed, Attempt, Outcome, RaceAborted
from streams.race import race
from tests.streams.fakes import Fatal, Retryable, Step, Upstreams, is_retryable

HANG = "hang"


def table(
    attempts: Sequence[Attempt[str]],
) -> list[tuple[str, int, str, float | None, float | None]]:
    return [
        (a.candidate, a.try_number, a.outcome.value, a.started_at, a.ended_at) for a in attempts
    ]


async def test_first_candidate_wins_and_no_other_starts(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(1)], "b": [Step(1)]})
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=2)
    assert trio.current_time() == 1
    assert (won.candidate, won.index, won.value.name) == ("a", 0, "a")
    ups.assert_all_closed_but(won.value)  # the winner is the caller's, open
    assert ups.starts() == [("a", 1, 0)]
    assert table(won.attempts) == [("a", 1, "won", 0, 1), ("b", 0, "not_started", None, None)]


async def test_hedge_starts_next_and_cancels_the_stalled_one(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(result=HANG)], "b": [Step(0.3)], "c": [Step(0)]})
    won = await race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
    assert trio.current_time() == 1.3
    assert won.candidate == "b"
    ups.assert_all_closed_but(won.value)
    assert ups.starts() == [("a", 1, 0), ("b", 1, 1)]
    assert ups.closes() == {("a", 1): 1.3, ("b", 1): None}
    assert table(won.attempts) == [
        ("a", 1, "cancelled", 0, 1.3),
        ("b", 1, "won", 1, 1.3),
        ("c", 0, "not_started", None, None),
    ]


async def test_first_keeps_its_lead_when_it_answers_during_the_hedge(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(1.5)], "b": [Step(1)]})
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
    assert (trio.current_time(), won.candidate) == (1.5, "a")
    ups.assert_all_closed_but(won.value)
    assert ups.closes() == {("a", 1): None, ("b", 1): 1.5}


async def test_failure_before_the_hedge_delay_starts_the_next_at_once(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(0.5, "retryable")], "b": [Step(1)]})
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=10)
    assert (trio.current_time(), won.candidate) == (1.5, "b")
    assert ups.starts() == [("a", 1, 0), ("b", 1, 0.5)]
    assert table(won.attempts)[0] == ("a", 1, "failed", 0, 0.5)
    assert isinstance(won.attempts[0].error, Retryable)
    ups.assert_all_closed_but(won.value)


async def test_a_hedged_failure_waits_for_the_current_attempts_hedge(
    autojump_clock: MockClock,
) -> None:
    # As in happy eyeballs, only the newest attempt's failure expedites the next start:
    # "a" failing at 1.2 while "b" is running does not start "c" before b's hedge at 2.
    ups = Upstreams({"a": [Step(1.2, "retryable")], "b": [Step(result=HANG)], "c": [Step(0.5)]})
    won = await race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
    assert (trio.current_time(), won.candidate) == (2.5, "c")
    assert ups.starts() == [("a", 1, 0), ("b", 1, 1), ("c", 1, 2)]
    ups.assert_all_closed_but(won.value)


async def test_hedge_delay_per_candidate(autojump_clock: MockClock) -> None:
    delays = {"a": 0.25, "b": None, "c": 0.25}
    ups = Upstreams({"a": [Step(result=HANG)], "b": [Step(3, "retryable")], "c": [Step(0.5)]})
    won = await race(
        ["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=delays.__getitem__
    )
    assert (trio.current_time(), won.candidate) == (3.75, "c")
    # "b" never hedges: "c" waits for b's failure at 3.25.
    assert ups.starts() == [("a", 1, 0), ("b", 1, 0.25), ("c", 1, 3.25)]
    assert ups.closes()[("a", 1)] == 3.75
    ups.assert_all_closed_but(won.value)


async def test_both_answer_in_the_same_instant_exactly_one_wins(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(2)], "b": [Step(1)]})
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
    assert trio.current_time() == 2
    loser = next(up for up in ups.opened if up is not won.value)
    assert loser.closed_at == 2
    ups.assert_all_closed_but(won.value)
    outcomes = sorted(a.outcome.value for a in won.attempts)
    assert outcomes == ["cancelled", "won"]


async def test_a_loser_producing_after_the_winner_is_closed_unused(
    autojump_clock: MockClock,
) -> None:
    # a's opening is shielded: it cannot be interrupted and produces at 1.5, after b won
    # at 1.3. It must not become a second winner, and the race returns once it is closed.
    ups = Upstreams({"a": [Step(1.5, shielded=True)], "b": [Step(0.3)]})
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
    assert (trio.current_time(), won.candidate) == (1.5, "b")
    ups.assert_all_closed_but(won.value)
    assert ups.closes() == {("a", 1): 1.5, ("b", 1): None}
    assert table(won.attempts) == [("a", 1, "cancelled", 0, 1.5), ("b", 1, "won", 1, 1.3)]


async def test_non_retryable_failure_stops_the_race(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(result=HANG)], "b": [Step(0.2, "fatal")], "c": [Step(0)]})
    with pytest.raises(RaceAborted) as caught:
        await race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
    assert trio.current_time() == 1.2
    assert isinstance(caught.value.error, Fatal)
    assert caught.value.__cause__ is caught.value.error
    assert table(caught.value.attempts) == [
        ("a", 1, "cancelled", 0, 1.2),
        ("b", 1, "failed", 1, 1.2),
        ("c", 0, "not_started", None, None),
    ]
    ups.assert_all_closed_but()


async def test_all_fail_with_every_attempt_recorded_in_order(autojump_clock: MockClock) -> None:
    ups = Upstreams(
        {"a": [Step(2, "retryable")], "b": [Step(0.5, "retryable")], "c": [Step(0.25, "retryable")]}
    )
    with pytest.raises(AllAttemptsFailed) as caught:
        await race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
    # a starts at 0; b hedges at 1 and fails at 1.5; c starts then and fails at 1.75;
    # a fails last, at 2.
    assert trio.current_time() == 2
    assert table(caught.value.attempts) == [
        ("a", 1, "failed", 0, 2),
        ("b", 1, "failed", 1, 1.5),
        ("c", 1, "failed", 1.5, 1.75),
    ]
    assert [str(e) for e in caught.value.errors] == ["a try 1", "b try 1", "c try 1"]
    assert str(caught.value.error) == "a try 1"  # the last to fail
    ups.assert_all_closed_but()


async def test_caller_deadline_closes_every_running_attempt(autojump_clock: MockClock) -> None:
    ups = Upstreams({name: [Step(result=HANG)] for name in "abcd"})
    with trio.move_on_after(2) as scope:
        await race(["a", "b", "c", "d"], ups.attempt, is_retryable=is_retryable, hedge_delay=0.75)
        raise AssertionError("no winner expected")  # pragma: no cover
    assert scope.cancelled_caught
    assert trio.current_time() == 2
    assert ups.starts() == [("a", 1, 0), ("b", 1, 0.75), ("c", 1, 1.5)]
    assert ups.closes() == {("a", 1): 2, ("b", 1): 2, ("c", 1): 2}


async def test_caller_cancelled_while_a_late_loser_closes(autojump_clock: MockClock) -> None:
    # b wins at 1.3; a cannot be interrupted until 1.5, and the caller gives up at 1.4:
    # the race waits for a, closes it and the winner nobody will get, then is cancelled.
    ups = Upstreams({"a": [Step(1.5, shielded=True)], "b": [Step(0.3)]})
    with trio.move_on_after(1.4) as scope:
        await race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1)
        raise AssertionError("the race is cancelled before it returns")  # pragma: no cover
    assert scope.cancelled_caught
    assert trio.current_time() == 1.5
    assert ups.closes() == {("a", 1): 1.5, ("b", 1): 1.5}


async def test_inline_first_candidate_falls_back_to_the_chain(autojump_clock: MockClock) -> None:
    # No hedge and no retry: the first candidate runs in the caller's task; its retryable
    # failure moves the chain on, with the records of both.
    ups = Upstreams({"a": [Step(0.5, "retryable")], "b": [Step(1)]})
    won = await race(["a", "b"], ups.attempt, is_retryable=is_retryable)
    assert (trio.current_time(), won.candidate) == (1.5, "b")
    assert table(won.attempts) == [("a", 1, "failed", 0, 0.5), ("b", 1, "won", 0.5, 1.5)]
    ups.assert_all_closed_but(won.value)


async def test_plain_values_and_a_custom_close(autojump_clock: MockClock) -> None:
    closed: list[tuple[str, float]] = []

    async def answer(name: str) -> str:
        with trio.CancelScope(shield=True):  # both answer: a at 1.5, b (from 1) at 1.75
            await trio.sleep(1.5 if name == "a" else 0.75)
        return f"answer from {name}"

    async def close(value: str) -> None:
        closed.append((value, trio.current_time()))

    won = await race(["a", "b"], answer, is_retryable=is_retryable, hedge_delay=1, close=close)
    assert (won.value, trio.current_time()) == ("answer from a", 1.75)
    assert closed == [("answer from b", 1.75)]


async def test_a_losers_close_error_is_recorded_not_raised(autojump_clock: MockClock) -> None:
    class Closing:
        def __init__(self, name: str) -> None:
            self.name = name

        async def aclose(self) -> None:
            raise OSError(f"reset while closing {self.name}")

    async def open_closing(name: str) -> Closing:
        # Shielded, so that both produce at 2 whichever the scheduler runs first.
        with trio.CancelScope(shield=True):
            await trio.sleep(2 if name == "a" else 1)
        return Closing(name)

    won = await race(["a", "b"], open_closing, is_retryable=is_retryable, hedge_delay=1)
    (lost,) = [a for a in won.attempts if a.outcome is Outcome.CANCELLED]
    assert isinstance(lost.error, OSError)
    assert str(lost.error) == f"reset while closing {lost.candidate}"


async def test_empty_chain_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        await race([], Upstreams({}).attempt, is_retryable=is_retryable)


async def test_a_first_try_made_outside_the_race_goes_on_with_the_chain(
    autojump_clock: MockClock,
) -> None:
    # The caller tried "a" in its own task (a stream it must keep entered there) and it
    # failed retryably at 0.5: the race starts "b" then and reports both tries.
    ups = Upstreams({"b": [Step(1)], "c": [Step(0)]})
    await trio.sleep(0.5)
    tried = Attempt("a", 0, 1, Outcome.FAILED, 0.0, 0.5, Retryable("a try 1"))
    won = await race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, tried=tried)
    assert (trio.current_time(), won.candidate, won.index) == (1.5, "b", 1)
    assert table(won.attempts) == [
        ("a", 1, "failed", 0, 0.5),
        ("b", 1, "won", 0.5, 1.5),
        ("c", 0, "not_started", None, None),
    ]
    ups.assert_all_closed_but(won.value)


async def test_a_fatal_or_last_first_try_made_outside_ends_the_race() -> None:
    ups = Upstreams({"b": [Step(0)]})
    fatal = Attempt("a", 0, 1, Outcome.FAILED, 0.0, 0.0, Fatal("a try 1"))
    with pytest.raises(RaceAborted) as aborted:
        await race(["a", "b"], ups.attempt, is_retryable=is_retryable, tried=fatal)
    assert ups.starts() == []
    assert table(aborted.value.attempts)[1] == ("b", 0, "not_started", None, None)
    last = Attempt("a", 0, 1, Outcome.FAILED, 0.0, 0.0, Retryable("a try 1"))
    with pytest.raises(AllAttemptsFailed):
        await race(["a"], ups.attempt, is_retryable=is_retryable, tried=last)
