"""`streams.tape`: every follower hears the recording from its start, as it grows."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from streams.tape import Tape, TapeClosed


async def _read(tape: Tape, into: list[tuple[float, bytes]], piece: int = 4) -> None:
    async for chunk in tape.follow(piece):
        into.append((trio.current_time(), chunk))


async def test_followers_read_from_the_start_as_it_grows(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tape = Tape()
    tape.append(b"abcdef")
    early: list[tuple[float, bytes]] = []
    late: list[tuple[float, bytes]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_read, tape, early)
        await trio.sleep(1)
        tape.append(b"gh")
        nursery.start_soon(_read, tape, late)  # a second attempt, a second later
        await trio.sleep(1)
        tape.append(b"ij")
        tape.close()
    assert early == [(0, b"abcd"), (0, b"ef"), (1, b"gh"), (2, b"ij")]
    assert late == [(1, b"abcd"), (1, b"efgh"), (2, b"ij")]
    assert tape.closed_at == 2 and tape.recorded() == b"abcdefghij"


async def test_a_closed_tape_refuses_more_and_wakes_who_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tape = Tape()
    woke: list[float] = []

    async def wait() -> None:
        await tape.wait_closed()
        woke.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.sleep(3)
        tape.close()
        tape.close()
    assert woke == [3] and tape.closed_at == 3
    with pytest.raises(TapeClosed):
        tape.append(b"late")


async def test_a_callback_runs_at_the_close_unless_forgotten(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tape = Tape()
    called: list[str] = []
    tape.when_closed(lambda: called.append("kept"))
    forget = tape.when_closed(lambda: called.append("forgotten"))
    forget()
    tape.close()
    tape.when_closed(lambda: called.append("late"))  # already closed: at once
    assert called == ["kept", "late"]
