"""Write-behind log of usage records: the request path hands a record over and moves on.

Records travel over a bounded trio memory channel to one long-lived task, which groups
them into batches and hands each batch to a sink (`gateway.workers.usage_sinks`) that
writes it in one transaction (group commit): by default a child process of its own
(`usage_process.ProcessSink`: the batch's Python work does not share the event loop's
interpreter lock), or a worker thread on the gateway's connection (`ThreadSink`, for an
in-memory database and `GATEWAY_USAGE_WRITER=thread`).

Decision, the writer wakes once per batch, not once per record: the first record of a
batch wakes it, then it sleeps until the batch's `max_delay` is up (or the batch is full,
or a flush or the close asks for it) and takes everything queued in one go. A record put
in the channel while the writer waits in `receive()` made it runnable at once, so on a
lone request (c=1) the writer ran between the request's usage record and its answer's
write, on the request's critical path, once per record.

Decision, when the channel is full: the record is dropped and counted, and a warning is
logged; `submit` never blocks and never raises. A full channel means the disk cannot keep
up; blocking the request path then would turn a bookkeeping backlog into an outage, and
an unbounded buffer would only postpone the problem into memory exhaustion. The
`dropped` counter makes the loss visible (to metrics and tests).

Lifecycle: the app's lifespan nursery starts the worker (`run(writer)`, which runs
`writer.run`), which owns the sink (and so the writer process).
At shutdown, `aclose()` (or cancelling that nursery) makes `run` write everything queued,
shielded for at most `shutdown_grace` seconds, so a graceful shutdown loses nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import attrs
import trio

from gateway.workers.usage_process import ProcessSink
from gateway.workers.usage_sinks import BatchFailed, BatchSink, ThreadSink
from store.db import DB_FILENAME, Database
from store.errors import database_errors
from store.response_rows import StoredRow
from store.usage import UsageRecord


def write_errors() -> tuple[type[Exception], ...]:
    """A batch that was not written: the database refused it, or the sink lost it."""
    return (*database_errors(), BatchFailed)


if TYPE_CHECKING:
    from gateway.platform.config import Settings

logger = logging.getLogger(__name__)


@attrs.frozen(eq=False)
class _FlushRequest:
    """Placed in the channel by `flush()`: set once every record before it is written."""

    done: trio.Event = attrs.field(factory=trio.Event)


@attrs.frozen(eq=False)
class _KeptRow:
    """A stored response's row (`store.response_rows`), written in the next batch's
    transaction; `written` is told once that batch is answered."""

    row: StoredRow
    written: Callable[[], None]


_Item = UsageRecord | _FlushRequest | _KeptRow


class UsageWriter:
    """Batches usage records into SQLite from one background task.

    Counters (read-only): `written` records, `batches_written`, `dropped` (channel full or
    writer closed), `failed` (a batch the database refused, or the writer process died
    holding; logged and skipped). `sink` defaults to a `ThreadSink` on `database`.
    """

    def __init__(
        self,
        database: Database,
        *,
        sink: BatchSink | None = None,
        capacity: int = 10_000,
        batch_size: int = 500,
        max_delay: float = 0.05,
        shutdown_grace: float = 10.0,
    ) -> None:
        self._sink: BatchSink = ThreadSink(database) if sink is None else sink
        self._batch_size = batch_size
        self._max_delay = max_delay
        self._shutdown_grace = shutdown_grace
        self._send, self._receive = trio.open_memory_channel[_Item](capacity)
        self._pending: list[UsageRecord] = []
        self._rows: list[_KeptRow] = []  # stored responses' rows, written with the records
        # Batch ids: this writer's random token and a count. The batch being written
        # keeps its id until it is answered (`_next_batch`).
        self._token = uuid.uuid4().hex
        self._batches = 0
        self._unanswered: tuple[str, list[UsageRecord], list[_KeptRow]] | None = None
        self._waiters: list[trio.Event] = []
        # While the writer sleeps out a batch's delay: its scope (what a full batch, a
        # flush or the close cancels) and how many records came meanwhile.
        self._collecting: trio.CancelScope | None = None
        self._collected = 0
        self._started = False
        self._finished = trio.Event()
        self.written = 0
        self.batches_written = 0
        self.dropped = 0
        self.failed = 0
        self.write_seconds = 0.0  # time spent in committed batch writes, for /metrics
        # Told (seconds, records) after each committed batch: the pause tracer's hook.
        self.on_batch: Callable[[float, int], None] | None = None
        # Seals the clear request-log bodies of a batch before it is written (PII redacted,
        # encrypted; plugged in by the root). Without it a clear body is never written.
        self.seal: Callable[[list[UsageRecord]], Awaitable[list[UsageRecord]]] | None = None

    @property
    def queued(self) -> int:
        """Records (and flush requests) waiting in the channel: the queue depth."""
        return self._send.statistics().current_buffer_used

    def submit(self, record: UsageRecord) -> bool:
        """Queue a record without blocking; False (and counted in `dropped`) if it was not."""
        try:
            self._send.send_nowait(record)
        except trio.WouldBlock:
            self._count_drop("the usage channel is full")
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._count_drop("the usage writer is closed")
        else:
            if self._collecting is not None:
                self._collected += 1
                if self._collected >= self._batch_size:  # a full batch goes at once
                    self._collecting.cancel()
            return True
        return False

    def _stop_collecting(self) -> None:
        """Wake the writer from a batch's delay (a flush or the close waits)."""
        if self._collecting is not None:
            self._collecting.cancel()

    def _count_drop(self, reason: str) -> None:
        self.dropped += 1
        if self.dropped == 1 or self.dropped % 1000 == 0:
            logger.warning("usage record dropped: %s (%d dropped so far)", reason, self.dropped)

    async def keep_row(self, row: StoredRow, written: Callable[[], None]) -> None:
        """Queue a stored response's row (`store.responses.ResponseKeeper`): written in the
        next batch's transaction, `written` called once that batch is answered. Unlike a
        record it is never dropped: a full channel makes this wait. Raises
        `trio.ClosedResourceError` once the writer is closed."""
        await self._send.send(_KeptRow(row, written))

    async def flush(self) -> None:
        """Wait until every record submitted before this call is handled: written, or
        counted in `failed` / `dropped` if the database refused it or shutdown ran out
        of time. Needs `run` to be running (or finished).

        Cancellation: stops waiting; the records are still written by `run`.
        """
        request = _FlushRequest()
        try:
            await self._send.send(request)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            await self._finished.wait()
            return
        self._stop_collecting()
        await request.done.wait()

    async def aclose(self) -> None:
        """Stop accepting records and wait until `run` has written every queued one.

        Later `submit` calls count as drops. Cancellation: stops waiting; `run` goes on
        with its own shielded, time-limited final write.
        """
        await self._send.aclose()
        self._stop_collecting()
        if self._started:
            await self._finished.wait()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The background task: batch and write records until closed or cancelled.

        Returns after `aclose()`, once the channel is empty. On cancellation, writes what
        is queued under a shield of at most `shutdown_grace` seconds, then re-raises.
        """
        self._started = True
        try:
            await self._sink.start()
            task_status.started()
            await self._write_loop()
        finally:
            with trio.move_on_after(self._shutdown_grace, shield=True) as cleanup:
                await self._drain()
                await self._sink.aclose()
            if cleanup.cancelled_caught:
                self._abandon()
            self._receive.close()
            self._finished.set()

    async def _write_loop(self) -> None:
        while True:
            try:
                first = await self._receive.receive()
            except trio.EndOfChannel:
                return
            self._take(first)
            await self._collect()
            await self._write_pending()

    async def _collect(self) -> None:
        """Let more records come until `max_delay` passed, the batch is full, or a flush
        (or the close) waits; then take every queued one without a checkpoint. The
        records wait in the channel meanwhile: none wakes the writer (module docstring)."""
        self._take_queued()
        if len(self._pending) >= self._batch_size or self._waiters:
            return
        self._collected = len(self._pending)
        with trio.CancelScope(deadline=trio.current_time() + self._max_delay) as scope:
            self._collecting = scope
            try:
                await trio.sleep_forever()
            finally:
                self._collecting = None
        self._take_queued()

    def _take(self, item: _Item) -> None:
        if isinstance(item, UsageRecord):
            self._pending.append(item)
        elif isinstance(item, _KeptRow):
            self._rows.append(item)
        else:
            self._waiters.append(item.done)

    async def _write_pending(self) -> None:
        """Write pending records in batches; then release the flushes waiting for them.

        A record leaves `_pending` only once its batch is committed, so a cancellation
        while waiting for the database leaves it there for the final drain.
        """
        while self._pending or self._rows:
            batch_id, batch, rows = await self._next_batch()
            try:
                seconds = await self._sink.write(batch, batch_id, [kept.row for kept in rows])
            except write_errors():
                logger.exception(
                    "could not write %d usage records and %d stored responses; skipped",
                    len(batch),
                    len(rows),
                )
                self.failed += len(batch)
            else:
                self._count_batch(seconds, len(batch))
            del self._pending[: len(batch)]
            del self._rows[: len(rows)]
            self._unanswered = None
            for kept in rows:
                kept.written()
        for waiter in self._waiters:
            waiter.set()
        self._waiters.clear()

    async def _next_batch(self) -> tuple[str, list[UsageRecord], list[_KeptRow]]:
        """The batch at the head of `_pending` with its id: the one a cancelled write left
        unanswered (the same records under the same id, so the store writes it at most
        once), else the next records under a new id."""
        if self._unanswered is None:
            self._batches += 1
            records = await self._sealed(self._pending[: self._batch_size])
            rows = self._rows[: self._batch_size]
            self._unanswered = (f"{self._token}.{self._batches}", records, rows)
        return self._unanswered

    async def _sealed(self, batch: list[UsageRecord]) -> list[UsageRecord]:
        """The batch with its clear bodies sealed (only a workspace that keeps bodies
        sends any; the others' batches pass untouched)."""
        if self.seal is None or all(r.body is None or r.body_sealed for r in batch):
            return batch
        return await self.seal(batch)

    def _count_batch(self, seconds: float, records: int) -> None:
        self.written += records
        self.batches_written += 1
        self.write_seconds += seconds
        if self.on_batch is not None:
            self.on_batch(seconds, records)

    def _take_queued(self) -> None:
        """Move everything already in the channel to `_pending` (no checkpoint)."""
        while True:
            try:
                self._take(self._receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                return

    async def _drain(self) -> None:
        """Write everything queued. The channel is found empty with no checkpoint between
        that check and the caller closing it, so no record can slip in unwritten."""
        while True:
            self._take_queued()
            if not self._pending and not self._rows and not self._waiters:
                return
            await self._write_pending()

    def _abandon(self) -> None:
        """The shutdown deadline passed: count what is left as dropped, release waiters."""
        self._take_queued()
        lost, rows = len(self._pending), self._rows
        self.dropped += lost
        self._pending.clear()
        self._rows = []
        logger.error(
            "shutdown deadline passed: %d usage records and %d stored responses not written",
            lost,
            len(rows),
        )
        for kept in rows:
            kept.written()
        for waiter in self._waiters:
            waiter.set()
        self._waiters.clear()


async def run(
    writer: UsageWriter, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """The usage log's worker: `writer.run` (see `UsageWriter.run`)."""
    await writer.run(task_status=task_status)


def usage_writer_for(settings: Settings, database: Database) -> UsageWriter:
    """The writer `settings.usage_writer` asks for: through a child process on
    `<data_dir>/gateway.db` or the PostgreSQL store (the default), or through a thread on
    `database`."""
    sink: BatchSink | None = None
    if settings.usage_writer == "process":
        sink = ProcessSink(
            settings.data_dir / DB_FILENAME,
            database_url=settings.database_url,
            ack_timeout=max(settings.shutdown_grace_s, 5.0),
        )
    return UsageWriter(
        database,
        sink=sink,
        capacity=settings.usage_queue_size,
        shutdown_grace=settings.shutdown_grace_s,
    )
