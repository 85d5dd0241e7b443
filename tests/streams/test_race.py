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
from streams.race import from_call, from_opener, race
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
    async with race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=2) as won:
        assert trio.current_time() == 1
        assert (won.candidate, won.index, won.value.name) == ("a", 0, "a")
        ups.assert_all_closed_but(won.value)
    assert won.value.closed_at == 1
    assert ups.starts() == [("a", 1, 0)]
    assert table(won.attempts) == [("a", 1, "won", 0, 1), ("b", 0, "not_started", None, None)]


async def test_hedge_starts_next_and_cancels_the_stalled_one(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(result=HANG)], "b": [Step(0.3)], "c": [Step(0)]})
    async with race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1) as won:
        assert trio.current_time() == 1.3
        assert won.candidate == "b"
        ups.assert_all_closed_but(won.value)
    assert ups.starts() == [("a", 1, 0), ("b", 1, 1)]
    assert ups.closes() == {("a", 1): 1.3, ("b", 1): 1.3}
    assert table(won.attempts) == [
        ("a", 1, "cancelled", 0, 1.3),
        ("b", 1, "won", 1, 1.3),
        ("c", 0, "not_started", None, None),
    ]


async def test_first_keeps_its_lead_when_it_answers_during_the_hedge(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(1.5)], "b": [Step(1)]})
    async with race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1) as won:
        assert (trio.current_time(), won.candidate) == (1.5, "a")
        ups.assert_all_closed_but(won.value)
    assert ups.closes() == {("a", 1): 1.5, ("b", 1): 1.5}


async def test_failure_before_the_hedge_delay_starts_the_next_at_once(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(0.5, "retryable")], "b": [Step(1)]})
    async with race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=10) as won:
        assert (trio.current_time(), won.candidate) == (1.5, "b")
    assert ups.starts() == [("a", 1, 0), ("b", 1, 0.5)]
    assert table(won.attempts)[0] == ("a", 1, "failed", 0, 0.5)
    assert isinstance(won.attempts[0].error, Retryable)
    ups.assert_all_closed_but()


async def test_a_hedged_failure_waits_for_the_current_attempts_hedge(
    autojump_clock: MockClock,
) -> None:
    # As in happy eyeballs, only the newest attempt's failure expedites the next start:
    # "a" failing at 1.2 while "b" is running does not start "c" before b's hedge at 2.
    ups = Upstreams({"a": [Step(1.2, "retryable")], "b": [Step(result=HANG)], "c": [Step(0.5)]})
    async with race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1) as won:
        assert (trio.current_time(), won.candidate) == (2.5, "c")
    assert ups.starts() == [("a", 1, 0), ("b", 1, 1), ("c", 1, 2)]
    ups.assert_all_closed_but()


async def test_hedge_delay_per_candidate(autojump_clock: MockClock) -> None:
    delays = {"a": 0.25, "b": None, "c": 0.25}
    ups = Upstreams({"a": [Step(result=HANG)], "b": [Step(3, "retryable")], "c": [Step(0.5)]})
    async with race(
        ["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=delays.__getitem__
    ) as won:
        assert (trio.current_time(), won.candidate) == (3.75, "c")
    # "b" never hedges: "c" waits for b's failure at 3.25.
    assert ups.starts() == [("a", 1, 0), ("b", 1, 0.25), ("c", 1, 3.25)]
    assert ups.closes()[("a", 1)] == 3.75
    ups.assert_all_closed_but()


async def test_both_answer_in_the_same_instant_exactly_one_wins(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(2)], "b": [Step(1)]})
    async with race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1) as won:
        assert trio.current_time() == 2
        loser = next(up for up in ups.opened if up is not won.value)
        assert loser.closed_at == 2
        ups.assert_all_closed_but(won.value)
    outcomes = sorted(a.outcome.value for a in won.attempts)
    assert outcomes == ["cancelled", "won"]
    ups.assert_all_closed_but()


async def test_a_loser_producing_after_the_winner_is_closed_unused(
    autojump_clock: MockClock,
) -> None:
    # a's opening is shielded: it cannot be interrupted and produces at 1.5, after b won
    # at 1.3. It must not become a second winner, and the race returns once it is closed.
    ups = Upstreams({"a": [Step(1.5, shielded=True)], "b": [Step(0.3)]})
    async with race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1) as won:
        assert (trio.current_time(), won.candidate) == (1.5, "b")
        ups.assert_all_closed_but(won.value)
    assert ups.closes() == {("a", 1): 1.5, ("b", 1): 1.5}
    assert table(won.attempts) == [("a", 1, "cancelled", 0, 1.5), ("b", 1, "won", 1, 1.3)]


async def test_non_retryable_failure_stops_the_race(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(result=HANG)], "b": [Step(0.2, "fatal")], "c": [Step(0)]})
    with pytest.raises(RaceAborted) as caught:
        async with race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1):
            raise AssertionError("no winner expected")  # pragma: no cover
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
        async with race(["a", "b", "c"], ups.attempt, is_retryable=is_retryable, hedge_delay=1):
            raise AssertionError("no winner expected")  # pragma: no cover
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
    racing = race(["a", "b", "c", "d"], ups.attempt, is_retryable=is_retryable, hedge_delay=0.75)
    with trio.move_on_after(2) as scope:
        async with racing:
            raise AssertionError("no winner expected")  # pragma: no cover
    assert scope.cancelled_caught
    assert trio.current_time() == 2
    assert ups.starts() == [("a", 1, 0), ("b", 1, 0.75), ("c", 1, 1.5)]
    assert ups.closes() == {("a", 1): 2, ("b", 1): 2, ("c", 1): 2}
    assert table(racing.attempts) == [
        ("a", 1, "cancelled", 0, 2),
        ("b", 1, "cancelled", 0.75, 2),
        ("c", 1, "cancelled", 1.5, 2),
        ("d", 0, "not_started", None, None),
    ]


async def test_caller_cancelled_inside_the_block_closes_the_winner(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(1)]})
    with trio.move_on_after(2) as scope:
        async with race(["a"], ups.attempt, is_retryable=is_retryable) as won:
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert won.value.closed_at == 2
    ups.assert_all_closed_but()


async def test_block_error_propagates_unwrapped_and_winner_closed(
    autojump_clock: MockClock,
) -> None:
    ups = Upstreams({"a": [Step(1)]})
    with pytest.raises(KeyError):
        async with race(["a"], ups.attempt, is_retryable=is_retryable) as won:
            await trio.sleep(0.5)
            raise KeyError("client went away")
    assert won.value.closed_at == 1.5
    ups.assert_all_closed_but()


async def test_winner_close_error_is_raised_after_the_block(autojump_clock: MockClock) -> None:
    class Leaky:
        closed = False

        async def aclose(self) -> None:
            self.closed = True
            raise OSError("connection reset while closing")

    async def open_leaky(_: str) -> Leaky:
        await trio.sleep(1)
        return Leaky()

    with pytest.raises(OSError, match="while closing"):
        async with race(["a"], from_opener(open_leaky), is_retryable=is_retryable) as won:
            pass
    assert won.value.closed


async def test_from_call_and_from_opener(autojump_clock: MockClock) -> None:
    class Resource:
        def __init__(self, name: str) -> None:
            self.name = name
            self.closed_at: float | None = None

        async def aclose(self) -> None:
            self.closed_at = trio.current_time()

    opened: list[Resource] = []

    async def open_resource(name: str) -> Resource:
        await trio.sleep(1 if name == "a" else 0.25)
        opened.append(Resource(name))
        return opened[-1]

    async with race(
        ["a", "b"], from_opener(open_resource), is_retryable=is_retryable, hedge_delay=0.5
    ) as won:
        assert (trio.current_time(), won.value.name) == (0.75, "b")
        assert won.value.closed_at is None
    assert [(r.name, r.closed_at) for r in opened] == [("b", 0.75)]

    async def answer(name: str) -> str:
        await trio.sleep(0.5)
        if name == "a":
            raise Retryable(name)
        return f"answer from {name}"

    async with race(["a", "b"], from_call(answer), is_retryable=is_retryable) as won_call:
        assert won_call.value == "answer from b"
    assert trio.current_time() == 1.75


async def test_empty_chain_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        race([], Upstreams({}).attempt, is_retryable=is_retryable)


async def test_a_race_is_entered_once(autojump_clock: MockClock) -> None:
    ups = Upstreams({"a": [Step(1), Step(1)]})
    racing = race(["a"], ups.attempt, is_retryable=is_retryable)
    async with racing:
        pass
    with pytest.raises(RuntimeError, match="only once"):
        async with racing:
            pass  # pragma: no cover
    ups.assert_all_closed_but()


class Closing:
    """A resource whose close fails, to show close errors are reported, not lost."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed_at: float | None = None

    async def aclose(self) -> None:
        self.closed_at = trio.current_time()
        raise OSError(f"reset while closing {self.name}")


async def open_closing(name: str) -> Closing:
    # Shielded, so that both produce at 2 whichever the scheduler runs first.
    with trio.CancelScope(shield=True):
        await trio.sleep(2 if name == "a" else 1)
    return Closing(name)


async def test_a_losers_close_error_is_recorded_not_raised(autojump_clock: MockClock) -> None:
    # Both produce at 2: the loser's failing close lands in its record; the winner's
    # failing close is raised when the block ends.
    with pytest.raises(OSError, match="reset while closing") as caught:
        async with race(
            ["a", "b"], from_opener(open_closing), is_retryable=is_retryable, hedge_delay=1
        ) as won:
            (lost,) = [a for a in won.attempts if a.outcome is Outcome.CANCELLED]
            assert isinstance(lost.error, OSError)
            assert str(lost.error) == f"reset while closing {lost.candidate}"
    assert str(caught.value) == f"reset while closing {won.candidate}"
    assert won.value.closed_at == 2


async def test_winner_close_error_is_noted_on_the_blocks_own_error(
    autojump_clock: MockClock,
) -> None:
    with pytest.raises(KeyError) as caught:
        async with race(["b"], from_opener(open_closing), is_retryable=is_retryable):
            raise KeyError("body failed")
    assert caught.value.__notes__ == [
        "closing the winning attempt also failed: OSError('reset while closing b')"
    ]


async def test_caller_cancelled_while_a_late_loser_closes(autojump_clock: MockClock) -> None:
    # b wins at 1.3; a cannot be interrupted until 1.5, and the caller gives up at 1.4:
    # the winner is closed at once, the loser as soon as it can be.
    ups = Upstreams({"a": [Step(1.5, shielded=True)], "b": [Step(0.3)]})
    with trio.move_on_after(1.4) as scope:
        async with race(["a", "b"], ups.attempt, is_retryable=is_retryable, hedge_delay=1):
            raise AssertionError("the race is cancelled before it returns")  # pragma: no cover
    assert scope.cancelled_caught
    assert trio.current_time() == 1.5
    assert ups.closes() == {("a", 1): 1.5, ("b", 1): 1.4}
