from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlite_utils
import trio

from gateway.workers.usage_writer import UsageWriter
from store import usage_batches
from store.db import Database, open_database
from tests.store.test_usage import make_usage

T = TypeVar("T")


class InlineDatabase:
    """A fake Database: runs each function inline (no thread) and notes the virtual time
    of each batch, so tests can assert exact batching times with the autojump clock."""

    def __init__(self, sdb: sqlite_utils.Database) -> None:
        self.sdb = sdb
        self.writes: list[tuple[float, int]] = []
        self.stall = False
        self.fail_next = False
        self.locked_next = 0  # this many calls answer "database is locked"

    async def run(self, fn: Callable[[sqlite_utils.Database], T]) -> T:
        if fn is usage_batches.forget_old:  # the writer's upkeep, not a batch
            return fn(self.sdb)
        await trio.lowlevel.checkpoint()
        if self.stall:
            await trio.sleep_forever()
        if self.fail_next:
            self.fail_next = False
            raise sqlite3.OperationalError("disk I/O error")
        if self.locked_next:
            self.locked_next -= 1
            raise sqlite3.OperationalError("database is locked")
        result = fn(self.sdb)
        self.writes.append((trio.current_time(), int(result)))  # type: ignore[call-overload]
        return result


def _rows(db: Database) -> int:
    return int(db.run_sync(lambda d: d.execute("SELECT count(*) FROM usage_records").fetchone()[0]))


def _writer(db: Any, **options: Any) -> UsageWriter:
    return UsageWriter(db, **options)


async def test_batches_by_size_and_flush(database: Database) -> None:
    writer = _writer(database, batch_size=10)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        for n in range(25):
            assert writer.submit(make_usage(n))
        await writer.flush()
        assert (writer.written, writer.batches_written) == (25, 3)
        assert _rows(database) == 25
        await writer.aclose()


async def test_waits_max_delay_to_group_records(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    fake = InlineDatabase(sdb)
    writer = _writer(fake, max_delay=0.05)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        start = trio.current_time()
        writer.submit(make_usage(1))
        await trio.sleep(0.03)
        writer.submit(make_usage(2))
        await trio.sleep(1)
        writer.submit(make_usage(3))
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert fake.writes == [(start + 0.05, 2), (start + 1.03 + 0.05, 1)]


class WriterSteps(trio.abc.Instrument):
    """Counts the steps of the writer's task: each is a scheduler round trip."""

    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith("UsageWriter.run"):
            self.steps += 1


async def test_records_within_a_batch_do_not_wake_the_writer(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    """The first record of a batch wakes the writer; the others wait in the channel and
    are taken together when the delay is up. A request whose record woke the writer paid
    a scheduler round trip before its answer was written."""
    fake = InlineDatabase(sdb)
    writer = _writer(fake, max_delay=0.05)
    steps = WriterSteps()
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        trio.lowlevel.add_instrument(steps)
        start = trio.current_time()
        for n in range(20):
            writer.submit(make_usage(n))
            await trio.sleep(0.001)  # a request's worth of time: the writer may run
        woken = steps.steps
        await trio.sleep(1)
        trio.lowlevel.remove_instrument(steps)
        nursery.cancel_scope.cancel()
    assert fake.writes == [(start + 0.05, 20)]
    assert woken == 1  # the first record's wake-up; 20 before


async def test_a_full_batch_is_written_before_the_delay(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    fake = InlineDatabase(sdb)
    writer = _writer(fake, batch_size=5, max_delay=0.05)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        start = trio.current_time()
        for n in range(7):
            writer.submit(make_usage(n))
            await trio.sleep(0.001)
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert fake.writes == [(start + 0.004, 5), (start + 0.005 + 0.05, 2)]


async def test_a_flush_does_not_wait_out_the_delay(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    fake = InlineDatabase(sdb)
    writer = _writer(fake, max_delay=0.05)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        start = trio.current_time()
        writer.submit(make_usage(1))
        await trio.sleep(0.01)
        writer.submit(make_usage(2))
        await writer.flush()
        assert trio.current_time() == start + 0.01
        await writer.aclose()
    assert fake.writes == [(start + 0.01, 2)]


async def test_cancellation_flushes_what_is_queued(tmp_path: Path) -> None:
    database = open_database(tmp_path)
    writer = _writer(database, batch_size=7)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        for n in range(50):
            writer.submit(make_usage(n))
        nursery.cancel_scope.cancel()
    database.close()
    reopened = open_database(tmp_path)
    try:
        assert _rows(reopened) == 50
    finally:
        reopened.close()
    assert (writer.written, writer.dropped) == (50, 0)


async def test_aclose_drains_then_refuses(database: Database) -> None:
    writer = _writer(database)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        for n in range(30):
            writer.submit(make_usage(n))
        await writer.aclose()
    assert _rows(database) == 30
    assert writer.submit(make_usage(99)) is False
    assert writer.dropped == 1
    await writer.flush()  # returns at once: the writer has finished


async def test_full_channel_drops_and_counts(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    writer = _writer(database, capacity=3)
    with caplog.at_level(logging.WARNING, logger="gateway.workers.usage_writer"):
        accepted = [writer.submit(make_usage(n)) for n in range(5)]
    assert accepted == [True, True, True, False, False]
    assert writer.dropped == 2
    assert len([r for r in caplog.records if "dropped" in r.getMessage()]) == 1


async def test_shutdown_deadline_bounds_the_final_write(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    fake = InlineDatabase(sdb)
    fake.stall = True
    writer = _writer(fake, shutdown_grace=2.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        for n in range(3):
            writer.submit(make_usage(n))
        await trio.sleep(1)
        cancelled_at = trio.current_time()
        nursery.cancel_scope.cancel()
    assert trio.current_time() == cancelled_at + 2.0
    assert (writer.written, writer.dropped) == (0, 3)


async def test_failed_batch_is_counted_and_writing_goes_on(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    fake = InlineDatabase(sdb)
    fake.fail_next = True
    writer = _writer(fake)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        writer.submit(make_usage(1))
        await writer.flush()
        writer.submit(make_usage(2))
        await writer.flush()
        await writer.aclose()
    assert (writer.failed, writer.written) == (1, 1)


async def test_a_locked_database_is_retried_then_written(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    """Scale-out: another worker's write outlasting the busy timeout costs a retry, not
    the batch."""
    fake = InlineDatabase(sdb)
    fake.locked_next = 2
    writer = _writer(fake)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        writer.submit(make_usage(1))
        began = trio.current_time()
        await writer.flush()
        await writer.aclose()
    assert (writer.failed, writer.written) == (0, 1)
    assert fake.writes[0][0] - began == pytest.approx(0.1 + 0.2)  # the two backoffs


async def test_a_database_locked_for_good_fails_the_batch(
    sdb: sqlite_utils.Database, autojump_clock: trio.testing.MockClock
) -> None:
    fake = InlineDatabase(sdb)
    fake.locked_next = 10
    writer = _writer(fake)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        writer.submit(make_usage(1))
        await writer.flush()
        await writer.aclose()
    assert (writer.failed, writer.written) == (1, 0)


async def test_the_thread_writer_forgets_batch_ids_past_a_day(database: Database) -> None:
    """Its batches carry ids too (`store.usage_batches`); the ids past their keeping time
    go when the writer starts (and every `FORGET_EVERY` batches), as in the child."""
    database.run_sync(
        lambda d: usage_batches.claim(d, "old", now=time.time() - usage_batches.KEEP_S - 60)
    )
    writer = _writer(database)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        writer.submit(make_usage(1))
        await writer.flush()
        await writer.aclose()
    ids = database.run_sync(lambda d: [r[0] for r in d.execute("SELECT id FROM usage_batches")])
    assert len(ids) == 1 and ids[0] != "old"
