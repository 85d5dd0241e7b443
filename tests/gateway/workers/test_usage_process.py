"""The usage writer through its own process (`ProcessSink`, issue 23), on a real SQLite
file and a real child process: what it writes is what the thread writer writes,
`flush()` still means committed, and a child that dies is replaced, logged and counted.
Real clock (the child's pipe is real I/O); each test takes well under 2 s."""

from __future__ import annotations

import io
import logging
import os
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlite_utils
import trio

from gateway.workers import usage_child
from gateway.workers.usage_process import ProcessSink
from gateway.workers.usage_wire import decode_ack, decode_batch, encode_batch, read_frame
from gateway.workers.usage_writer import UsageWriter
from store import responses
from store.db import DB_FILENAME, Database, open_database
from store.request_log import LoggedAttempt
from store.responses import ResponseKeeper
from store.sqlite_handle import open_existing
from store.usage import UsageRecord
from tests.store.test_response_keeper import record
from tests.store.test_usage import make_usage


def _full(n: int) -> UsageRecord:
    """A record with every optional field set, in a zone other than UTC."""
    return make_usage(
        n,
        created_at=datetime(2026, 11, 23, 22, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
        + timedelta(seconds=n),
        audio_seconds=1.5,
        characters=12,
        pages=2,
        searches=1,
        bytes_stored=4096,
        latency_ms=12.25,
        energy_kwh=0.002,
        carbon_gco2e=0.7,
        error_code="rate_limited" if n % 2 else None,
        cache_hit=bool(n % 3 == 0),
        cache_savings_usd=0.01,
        project="apollo",
        team="voice",
        tags=("b", "a"),
        prompt_hash=f"h{n % 4}",
        agent_session="s1",
        model="gpt-4o" if n % 2 else "claude-sonnet",
        request_log=n % 5 != 4,
        model_requested="auto",
        ttft_ms=3.5 + n,
        attempts=(
            LoggedAttempt("openai", "gpt-4o", 1, 0.25, 2.5, "failed", "provider_timeout"),
            LoggedAttempt("anthropic", "claude-sonnet", 1, 2.75, None, "won"),
        ),
        trace_id=f"{n:032x}",
        body="sealed" if n % 2 else None,
        body_sealed=n % 4 == 1,
    )


def test_the_wire_round_trips_every_field() -> None:
    records = [_full(n) for n in range(5)] + [
        make_usage(9, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    ]
    stored = [responses.row(record("r1")), responses.row(record("r2", previous="r1"))]
    framed = encode_batch(7, "w1.3", records, stored)
    seq, batch_id, decoded, rows = decode_batch(framed[4:])
    assert (seq, batch_id) == (7, "w1.3")
    assert decoded == records
    assert rows == stored


def _tables(db: Database) -> dict[str, list[tuple[object, ...]]]:
    """Every usage table's rows (records, rollups, sketches, the request log), in a stable
    order."""

    def read(sdb: sqlite_utils.Database) -> dict[str, list[tuple[object, ...]]]:
        names = [n for n in sdb.table_names() if n.startswith("usage") or n == "request_log"]
        names.remove("usage_batches")  # the writers' own random batch ids
        return {
            n: sorted(map(tuple, sdb.execute(f"SELECT * FROM [{n}]").fetchall()), key=repr)
            for n in names
        }

    return db.run_sync(read)


@pytest.fixture
async def on_file(tmp_path: Path) -> AsyncIterator[tuple[Database, Path]]:
    db = await trio.to_thread.run_sync(open_database, tmp_path)
    try:
        yield db, tmp_path / DB_FILENAME
    finally:
        db.close()


async def test_the_process_writes_what_the_thread_writes(
    on_file: tuple[Database, Path], tmp_path: Path
) -> None:
    db, path = on_file
    sink = ProcessSink(path)
    writer = UsageWriter(db, sink=sink, batch_size=10)
    batches: list[tuple[float, int]] = []
    writer.on_batch = lambda seconds, records: batches.append((seconds, records))
    records = [_full(n) for n in range(25)]
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        for record in records:
            assert writer.submit(record)
        await writer.flush()
        # flush() returned: committed, and visible through the gateway's own connection.
        assert writer.written == 25 and writer.failed == 0 and writer.dropped == 0
        assert sorted(n for _, n in batches) == [5, 10, 10]
        assert all(seconds > 0 for seconds, _ in batches) and writer.write_seconds > 0
        from_process = _tables(db)
        assert len(from_process["usage_records"]) == 25
        assert len(from_process["request_log"]) == 20  # the records that asked for it
        nursery.cancel_scope.cancel()
    reference = await trio.to_thread.run_sync(open_database, tmp_path / "thread")
    try:
        threaded = UsageWriter(reference, batch_size=10)
        async with trio.open_nursery() as nursery:
            await nursery.start(threaded.run)
            for record in records:
                threaded.submit(record)
            await threaded.flush()
            nursery.cancel_scope.cancel()
        assert _tables(reference) == from_process
    finally:
        reference.close()


async def test_stored_responses_ride_the_batches_into_the_process(
    on_file: tuple[Database, Path],
) -> None:
    """A kept response's row crosses the pipe with the usage records and is written in
    their transaction by the child; the keeper holds it until then, and a clean
    shutdown writes what is still queued."""
    db, path = on_file
    writer = UsageWriter(db, sink=ProcessSink(path), batch_size=10, max_delay=10.0)
    keeper = ResponseKeeper(db, writer)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        for n in range(15):
            writer.submit(make_usage(n))
            await keeper.keep(record(f"r{n}", previous=f"r{n - 1}" if n else None))
        chain = await keeper.conversation("default", "r14")  # held: none written yet
        assert len(chain) == 30
        await writer.flush()
        assert keeper._kept == {}  # answered: read back from the file from now on
        assert await keeper.conversation("default", "r14") == chain
        await keeper.keep(record("last"))
        nursery.cancel_scope.cancel()  # queued at shutdown: the drain writes it
    assert await keeper.get("default", "last") == record("last")
    count = "SELECT count(*) FROM stored_responses"
    assert db.run_sync(lambda d: d.execute(count).fetchone()[0]) == 16
    assert writer.written == 15 and writer.failed == 0


async def test_shutdown_drains_and_the_child_exits(on_file: tuple[Database, Path]) -> None:
    db, path = on_file
    sink = ProcessSink(path)
    writer = UsageWriter(db, sink=sink, batch_size=50, max_delay=10.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        pid = sink.pid
        assert pid is not None
        for n in range(120):
            writer.submit(make_usage(n))
        nursery.cancel_scope.cancel()  # records still queued: the drain writes them
    assert writer.written == 120
    assert (
        db.run_sync(lambda d: d.execute("SELECT count(*) FROM usage_records").fetchone()[0]) == 120
    )
    assert sink.pid is None
    assert _reaped(pid)  # by its owner: no zombie, no orphan


async def test_a_child_killed_while_idle_is_replaced_and_nothing_is_lost(
    on_file: tuple[Database, Path], caplog: pytest.LogCaptureFixture
) -> None:
    db, path = on_file
    sink = ProcessSink(path)
    writer = UsageWriter(db, sink=sink)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        writer.submit(make_usage(0))
        await writer.flush()
        first = sink.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        await _until_dead(first)
        writer.submit(make_usage(1))
        await writer.flush()
        assert writer.written == 2 and writer.failed == 0
        assert sink.restarts == 1 and sink.pid not in (None, first)
        nursery.cancel_scope.cancel()
    assert any("exited with status -9 while idle" in r.getMessage() for r in caplog.records)


async def test_a_child_killed_holding_a_batch_hands_it_to_the_next_child_once(
    on_file: tuple[Database, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """The batch a killed child held unanswered is sent again to the new child, and every
    record is written exactly once (issue 37)."""
    db, path = on_file
    sink = ProcessSink(path)
    writer = UsageWriter(db, sink=sink)
    caplog.set_level(logging.ERROR)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        writer.submit(make_usage(0))
        await writer.flush()  # the child is up and has answered once
        child = sink.pid
        assert child is not None
        os.kill(child, signal.SIGSTOP)  # it will hold the next batch unanswered
        for n in range(1, 4):
            writer.submit(make_usage(n))
        nursery.start_soon(writer.flush)
        with trio.fail_after(20):
            while True:  # until the batch is handed over (polled: a test's view)
                if sink.sent >= 2:
                    break
                await trio.sleep(0.01)
        await trio.sleep(0.05)  # and written into the stopped child's pipe
        assert writer.failed == 0 and writer.written == 1
        os.kill(child, signal.SIGKILL)
        await writer.flush()
        assert writer.failed == 0 and writer.written == 4
        assert sink.restarts == 1 and sink.resent == 1
        writer.submit(make_usage(4))
        await writer.flush()
        assert writer.written == 5 and sink.restarts == 1
        nursery.cancel_scope.cancel()
    rows = db.run_sync(lambda d: [r[0] for r in d.execute("SELECT request_id FROM usage_records")])
    assert sorted(rows) == [f"req_{n}" for n in range(5)]
    assert any("died holding a batch of 3 records" in r.getMessage() for r in caplog.records)
    assert not any("could not write" in r.getMessage() for r in caplog.records)


async def test_a_hung_child_is_killed_and_its_batch_written_once_by_the_next(
    on_file: tuple[Database, Path],
) -> None:
    """A child stuck mid-batch (here: SQLite's write lock held by another connection, so
    its transaction waits) is killed past the ack timeout; the new child writes the
    batch once the lock is free, exactly once."""
    db, path = on_file
    sink = ProcessSink(path, ack_timeout=3.0)  # a child's start-up counts in its first batch
    writer = UsageWriter(db, sink=sink)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        writer.submit(make_usage(0))
        await writer.flush()
        first, restarts, resent = sink.pid, sink.restarts, sink.resent
        blocker = open_existing(path)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            for n in range(1, 4):
                writer.submit(make_usage(n))
            nursery.start_soon(writer.flush)
            with trio.fail_after(30):
                while True:  # until killed past the ack timeout (polled: a test's view)
                    if sink.restarts > restarts:
                        break
                    await trio.sleep(0.05)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        await writer.flush()
        assert writer.failed == 0 and writer.written == 4
        assert sink.pid not in (None, first) and sink.resent > resent
        nursery.cancel_scope.cancel()
    rows = db.run_sync(lambda d: [r[0] for r in d.execute("SELECT request_id FROM usage_records")])
    assert sorted(rows) == [f"req_{n}" for n in range(4)]


def test_a_batch_sent_again_after_its_commit_is_not_written_twice(tmp_path: Path) -> None:
    """The case the resend must not double: the first child committed the batch and was
    killed before its answer reached the gateway. The next child is given the same batch
    id, answers it as written, and writes nothing."""
    db = open_database(tmp_path)
    db.close()
    batch = [make_usage(n) for n in range(3)]
    answers = io.BytesIO()
    for _child in range(2):  # two children, each its own connection, the same batch
        sdb = open_existing(tmp_path / DB_FILENAME)
        try:
            usage_child.serve(io.BytesIO(encode_batch(1, "w.1", batch)), answers, sdb)
        finally:
            sdb.close()
    sdb = open_existing(tmp_path / DB_FILENAME)
    try:
        rows = sorted(r[0] for r in sdb.execute("SELECT request_id FROM usage_records"))
        rollup = sdb.execute("SELECT sum(requests) FROM usage_rollups").fetchone()[0]
    finally:
        sdb.close()
    assert rows == ["req_0", "req_1", "req_2"] and rollup == 3
    answers.seek(0)
    acks = [decode_ack(frame)[:3] for frame in iter(lambda: read_frame(answers), None)]
    assert acks == [(1, 3, None), (1, 3, None)]


async def test_a_child_that_cannot_start_fails_batches_and_backs_off(
    tmp_path: Path, database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "not-a-db").mkdir()
    sink = ProcessSink(tmp_path / "not-a-db", restart_delay=0.2)
    writer = UsageWriter(database, sink=sink, max_delay=0.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(writer.run)
        for n in range(2):  # the second start waits for the backoff
            writer.submit(make_usage(n))
            await writer.flush()
        assert writer.failed == 2 and writer.written == 0
        assert writer.dropped == 0
        nursery.cancel_scope.cancel()
    assert sum("usage writer process" in r.getMessage() for r in caplog.records) >= 2


async def _until_dead(pid: int) -> None:
    """Until the killed child is a zombie or gone (its parent, this process, reaps it)."""
    with trio.fail_after(20):  # a niced child on a loaded machine dies slowly
        while True:
            if _process_state(pid) in (None, "Z", "X"):
                return
            await trio.sleep(0.01)


def _process_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def _reaped(pid: int) -> bool:
    """Whether `pid` is no child of ours any more (waited for)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


class _GoneReader(io.RawIOBase):
    """An acknowledgement pipe whose reader (the gateway) died."""

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_the_child_writes_what_it_received_when_the_gateway_is_gone(tmp_path: Path) -> None:
    """In the child's own loop (`usage_child.serve`): acknowledgements that cannot be sent
    stop, the writing does not; a frame cut short (the gateway died while sending it) is
    not a batch and is not written."""
    db = open_database(tmp_path)
    db.close()
    whole = encode_batch(1, "w.1", [make_usage(n) for n in range(3)])
    whole += encode_batch(2, "w.2", [make_usage(n) for n in range(3, 5)])
    cut = encode_batch(3, "w.3", [make_usage(9)])[:-5]
    sdb = open_existing(tmp_path / DB_FILENAME)
    try:
        usage_child.serve(io.BytesIO(whole + cut), io.BufferedWriter(_GoneReader()), sdb)
        rows = sorted(r[0] for r in sdb.execute("SELECT request_id FROM usage_records"))
    finally:
        sdb.close()
    assert rows == [f"req_{n}" for n in range(5)]
