"""Stored responses written behind their answers (`store.responses.ResponseKeeper`), by
the usage writer's batches (`UsageWriter.keep_row`), in its thread sink here and through
its real process in `tests/gateway/workers/test_usage_process.py`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import sqlite_utils
import trio

from gateway.workers.usage_writer import UsageWriter
from store import responses
from store.db import Database
from store.response_rows import put_rows
from store.responses import BrokenChain, ResponseKeeper, StoredResponse


def record(
    response_id: str, previous: str | None = None, workspace: str = "default"
) -> StoredResponse:
    return StoredResponse(
        id=response_id,
        workspace_id=workspace,
        key_id="key_1",
        previous_response_id=previous,
        created_at=1,
        expires_at=None,
        input_items=[{"id": f"in_{response_id}", "type": "message", "text": 'a "q"\n é'}],
        response={"id": response_id, "output": [{"id": f"out_{response_id}"}]},
    )


async def written(database: Database, response_id: str) -> bool:
    return await database.run(lambda d: responses.get(d, "default", response_id)) is not None


@pytest.fixture
async def usage(database: Database) -> AsyncIterator[UsageWriter]:
    """A usage writer not yet running (a test starts it when its rows may be written)."""
    yield UsageWriter(database, max_delay=0.05)


async def test_a_kept_response_is_readable_at_once_and_written_by_the_next_batch(
    database: Database, usage: UsageWriter
) -> None:
    keeper = ResponseKeeper(database, usage)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keeper.keep, record("r1"))  # the channel send: queued
        nursery.start_soon(keeper.keep, record("r2", previous="r1"))
    assert (await keeper.get("default", "r1")) == record("r1")  # before any write
    assert not await written(database, "r1")
    items = await keeper.conversation("default", "r2")  # the chain, from memory
    assert [item["id"] for item in items] == ["in_r1", "out_r1", "in_r2", "out_r2"]
    async with trio.open_nursery() as nursery:
        await nursery.start(usage.run)
        await usage.flush()
        assert await written(database, "r1") and await written(database, "r2")
        assert keeper._kept == {}  # answered: read from the store from now on
        assert await keeper.conversation("default", "r2") == items
        assert (await keeper.get("default", "r1")) == record("r1")  # the JSON read back
        nursery.cancel_scope.cancel()


async def test_an_erased_response_in_flight_is_deleted_once_written(
    database: Database, usage: UsageWriter
) -> None:
    """Its row was handed to the writer before the DELETE: the erasure waits for it, so
    it cannot land after the deletion."""
    keeper = ResponseKeeper(database, usage)
    async with trio.open_nursery() as nursery:
        await nursery.start(usage.run)
        await keeper.keep(record("gone"))
        await keeper.keep(record("kept"))
        assert await responses.erase_one(database, keeper, "default", "gone") is True
        assert await responses.erase_one(database, keeper, "default", "gone") is False
        await usage.flush()
        nursery.cancel_scope.cancel()
    assert await keeper.get("default", "gone") is None
    assert not await written(database, "gone")
    assert await written(database, "kept")


async def test_a_row_of_a_deleted_workspace_is_not_written(database: Database) -> None:
    """A workspace erased while its last response was on its way to the writer keeps
    none (the row is inserted only while its workspace exists)."""
    rows = [responses.row(record("orphan", workspace="ws_gone")), responses.row(record("r1"))]

    def write(db: sqlite_utils.Database) -> None:
        with db.atomic():  # the writer's batch transaction
            put_rows(db, rows)

    database.run_sync(write)
    count = "SELECT id FROM stored_responses ORDER BY id"
    assert database.run_sync(lambda d: d.execute(count).fetchall()) == [("r1",)]


async def test_a_kept_response_is_only_its_workspaces(
    database: Database, usage: UsageWriter
) -> None:
    keeper = ResponseKeeper(database, usage)
    await keeper.keep(record("mine"))  # kept, not yet written
    assert await keeper.get("other", "mine") is None
    with pytest.raises(BrokenChain):
        await keeper.conversation("other", "mine")
    keeper.forget_workspace("default")
    assert await keeper.get("default", "mine") is None


async def test_a_clean_shutdown_writes_every_kept_response(
    database: Database, usage: UsageWriter
) -> None:
    keeper = ResponseKeeper(database, usage)
    async with trio.open_nursery() as nursery:
        await nursery.start(usage.run)
        for n in range(30):
            await keeper.keep(record(f"r{n}"))
        nursery.cancel_scope.cancel()  # the lifespan ends: the writer drains its queue
    assert all([await written(database, f"r{n}") for n in range(30)])
    assert keeper._kept == {}


async def test_a_response_kept_after_the_writer_closed_is_written_directly(
    database: Database, usage: UsageWriter
) -> None:
    keeper = ResponseKeeper(database, usage)
    async with trio.open_nursery() as nursery:
        await nursery.start(usage.run)
        await usage.aclose()
    await keeper.keep(record("late"))
    assert await written(database, "late")
    assert keeper._kept == {}


async def test_keep_waits_while_the_writers_queue_is_full(database: Database) -> None:
    """Bounded: a row is never dropped as a usage record may be; `keep` waits for room."""
    usage = UsageWriter(database, capacity=1, max_delay=0.0)
    keeper = ResponseKeeper(database, usage)
    await keeper.keep(record("r1"))  # fills the channel
    with trio.move_on_after(0.2) as waited:
        await keeper.keep(record("r2"))
    assert waited.cancelled_caught  # it waited for room
    assert await keeper.get("default", "r2") is None  # cancelled: nothing kept
    async with trio.open_nursery() as nursery:
        await nursery.start(usage.run)
        await keeper.keep(record("r3"))  # room again: the writer took r1
        await usage.flush()
        nursery.cancel_scope.cancel()
    assert await written(database, "r1") and await written(database, "r3")
