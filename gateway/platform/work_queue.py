"""A bounded queue of ids to process, and the pool that serves it (files, data documents).

Uploads queue their row's id (`enqueue`): a full queue makes the upload wait
(backpressure, never a drop), and an id already queued or in work is not queued twice
(`claimed`, released when its processing ends). `serve` runs `workers` tasks taking ids,
one at a time each, and a sweep that queues the rows the store says are unfinished: at start
(those a stopped gateway left), then every `sweep_interval_s` (an upload cancelled while
waiting for queue space). No row stays stuck. An unexpected failure of one id is logged and
handed to `failed` (the family marks the row), and the pool goes on.

Cancellation: the pool stops with its owner's nursery; a row cut mid-run keeps its
unfinished status in the store and is processed again at the next start.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import attrs
import trio

logger = logging.getLogger(__name__)


@attrs.define(eq=False)
class WorkQueue:
    size: int
    send: trio.MemorySendChannel[str] = attrs.field(init=False)
    receive: trio.MemoryReceiveChannel[str] = attrs.field(init=False)
    claimed: set[str] = attrs.field(factory=set)

    def __attrs_post_init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[str](self.size)

    async def enqueue(self, item: str) -> None:
        """Queue an id, waiting while the queue is full; one already claimed is not queued
        twice. Cancelled while waiting, the claim is dropped (the sweep queues it later)."""
        if item in self.claimed:
            return
        self.claimed.add(item)
        try:
            await self.send.send(item)
        except BaseException:
            self.claimed.discard(item)
            raise

    def release(self, item: str) -> None:
        self.claimed.discard(item)


@attrs.frozen
class Work:
    """What one family's pool does: `name` for logs, `unfinished()` the ids to sweep in,
    `process(id)` (which skips an id whose row is gone or finished), `failed(id, error)`."""

    name: str
    queue: WorkQueue
    workers: int
    sweep_interval_s: float
    unfinished: Callable[[], Awaitable[list[str]]]
    process: Callable[[str], Awaitable[None]]
    failed: Callable[[str, Exception], Awaitable[None]]


async def serve(work: Work, *, task_status: trio.TaskStatus[None]) -> None:
    """Serve the queue until cancelled."""
    async with trio.open_nursery() as nursery:
        for _ in range(max(1, work.workers)):
            nursery.start_soon(_serve, work, work.queue.receive.clone())
        nursery.start_soon(_sweep, work)
        task_status.started()


async def _sweep(work: Work) -> None:
    while True:
        for item in await work.unfinished():
            await work.queue.enqueue(item)
        await trio.sleep(work.sweep_interval_s)


async def _serve(work: Work, ids: trio.MemoryReceiveChannel[str]) -> None:
    async with ids:
        async for item in ids:
            try:
                await _one(work, item)
            finally:
                work.queue.release(item)


async def _one(work: Work, item: str) -> None:
    try:
        await work.process(item)
    except Exception as exc:
        logger.exception("%s %s: processing failed unexpectedly", work.name, item)
        await work.failed(item, exc)
