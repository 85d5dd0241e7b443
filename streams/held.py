"""Background tasks that serve a block, and resources held open by one of them.

`background()` is a nursery for tasks that work for the code in its block (a stream's
read-ahead, the task holding an upstream open) rather than beside it: an exception raised
by the block itself (the client went away, a bug) reaches the caller as raised, not
wrapped in an ExceptionGroup as trio wraps whatever leaves a nursery, because the code
around it (`except ApiError`, `except trio.Cancelled`) must see it as it is. The block
ends its tasks (cancel them, or let them finish) before it leaves.

`hold_open(nursery, manager)` turns an async context manager into a plain object: a task
of `nursery` enters the manager, hands out what it yielded and keeps it open until
`release()` (or `aclose()`), then exits it, in that same task, as trio requires of a
manager that holds a cancel scope or a nursery (a WebSocket's reader). The race hands its
winner out this way (`streams.race`), as `trio.open_tcp_stream` hands out a socket.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


@asynccontextmanager
async def background() -> AsyncIterator[trio.Nursery]:
    """`async with background() as nursery:` (see the module docstring).

    Cancellation: a cancelled block is left like any other; the nursery then waits for its
    tasks, which the cancellation reaches too, and `Cancelled` goes on unwrapped.
    """
    failure: BaseException | None = None
    async with trio.open_nursery() as nursery:
        try:
            yield nursery
        except BaseException as exc:  # re-raised below, once the nursery is closed
            failure = exc
    if failure is not None:
        raise failure


@dataclass(eq=False)
class Held(Generic[T]):
    """What a held manager yielded (`value`), open until released."""

    value: T
    _released: trio.Event = field(default_factory=trio.Event)
    _closed: trio.Event = field(default_factory=trio.Event)

    def release(self) -> None:
        """Let the holding task exit the manager (it does so when next scheduled)."""
        self._released.set()

    async def aclose(self) -> None:
        """Release, and wait until the manager has been exited."""
        self._released.set()
        await self._closed.wait()


async def hold_open(
    nursery: trio.Nursery,
    manager: AbstractAsyncContextManager[T],
    *,
    enter_within: float = math.inf,
) -> Held[T]:
    """Enter `manager` in a new task of `nursery` and return once it is entered.

    Raises what entering raised, or `trio.TooSlowError` when entering took longer than
    `enter_within` seconds. The manager is exited when the holder is released, or when
    `nursery` is cancelled. Cancellation while entering: the manager's own cleanup runs and
    `Cancelled` propagates.
    """
    held: Held[T] = await nursery.start(_hold, manager, enter_within)
    return held


async def _hold(
    manager: AbstractAsyncContextManager[T],
    enter_within: float,
    *,
    task_status: trio.TaskStatus[Held[T]],
) -> None:
    # The deadline's scope stays entered, lifted, until the manager is left: a manager may
    # hold a nursery for its block, which must nest inside every scope entered before it.
    held: Held[T] | None = None
    try:
        with trio.CancelScope(deadline=trio.current_time() + enter_within) as entering:
            async with manager as value:
                entering.deadline = math.inf
                held = Held(value)
                task_status.started(held)
                await held._released.wait()
    finally:
        if held is not None:
            held._closed.set()
    if entering.cancelled_caught:
        raise trio.TooSlowError
