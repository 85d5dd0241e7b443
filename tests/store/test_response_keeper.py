"""Stored responses written behind their answers (`store.responses.ResponseKeeper`)."""

from __future__ import annotations

import pytest
import sqlite_utils
import trio
import trio.testing

from store import responses
from store.db import Database
from store.responses import GROUP_WINDOW_S, BrokenChain, ResponseKeeper, StoredResponse


def record(response_id: str, previous: str | None = None) -> StoredResponse:
    return StoredResponse(
        id=response_id,
        workspace_id="default",
        key_id="key_1",
        previous_response_id=previous,
        created_at=1,
        expires_at=None,
        input_items=[{"id": f"in_{response_id}", "type": "message"}],
        response={"id": response_id, "output": [{"id": f"out_{response_id}"}]},
    )


async def written(database: Database, response_id: str) -> bool:
    return await database.run(lambda d: responses.get(d, "default", response_id)) is not None


async def test_a_kept_response_is_readable_at_once_and_written_behind(
    database: Database,
) -> None:
    keeper = ResponseKeeper(database)
    await keeper.keep(record("r1"))
    await keeper.keep(record("r2", previous="r1"))
    assert (await keeper.get("default", "r1")) == record("r1")  # before any write
    assert not await written(database, "r1")
    items = await keeper.conversation("default", "r2")  # the chain, from memory
    assert [item["id"] for item in items] == ["in_r1", "out_r1", "in_r2", "out_r2"]
    async with trio.open_nursery() as nursery:
        await nursery.start(keeper.run)
        with trio.fail_after(5):
            while not await written(database, "r2"):  # noqa: ASYNC110 (a row, no event)
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert await written(database, "r1")
    assert await keeper.conversation("default", "r2") == items  # now from the store


async def test_a_forgotten_response_is_never_written(database: Database) -> None:
    keeper = ResponseKeeper(database)
    await keeper.keep(record("gone"))
    await keeper.keep(record("kept"))
    assert keeper.forget("default", "gone") is True
    assert keeper.forget("default", "gone") is False
    async with trio.open_nursery() as nursery:
        await nursery.start(keeper.run)
        with trio.fail_after(5):
            while not await written(database, "kept"):  # noqa: ASYNC110 (a row, no event)
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert not await written(database, "gone")
    assert await keeper.get("default", "gone") is None


async def test_stopping_writes_what_is_left(database: Database) -> None:
    keeper = ResponseKeeper(database)
    async with trio.open_nursery() as nursery:
        await nursery.start(keeper.run)
        for n in range(20):
            await keeper.keep(record(f"r{n}"))
        nursery.cancel_scope.cancel()  # before the writer had a turn
    assert all([await written(database, f"r{n}") for n in range(20)])


async def test_a_kept_response_is_another_workspace_s_unknown_one(database: Database) -> None:
    keeper = ResponseKeeper(database)
    await keeper.keep(record("mine"))  # kept, not yet written
    assert await keeper.get("other", "mine") is None
    with pytest.raises(BrokenChain) as broken:
        await keeper.conversation("other", "mine")
    assert broken.value.response_id == "mine"


async def test_a_full_queue_holds_keep_back_until_the_group_is_written(
    database: Database, autojump_clock: trio.testing.MockClock
) -> None:
    keeper = ResponseKeeper(database, capacity=2)
    async with trio.open_nursery() as nursery:
        await nursery.start(keeper.run)
        started = trio.current_time()
        await keeper.keep(record("r1"))
        await keeper.keep(record("r2"))
        assert trio.current_time() == started  # room: no wait
        await keeper.keep(record("r3"))  # full: waits for the group of r1 and r2
        assert trio.current_time() - started == GROUP_WINDOW_S
        assert (await keeper.get("default", "r3")) == record("r3")  # read its own write
        assert await written(database, "r2")
        nursery.cancel_scope.cancel()
    assert await written(database, "r3")


def test_a_group_larger_than_one_statement_is_written_whole(database: Database) -> None:
    records = [record(f"r{n}") for n in range(2 * responses.ROWS_PER_INSERT + 7)]
    database.run_sync(lambda db: responses.put_many(db, records))
    database.run_sync(lambda db: responses.put_many(db, records[:3]))  # again: replaced

    def read_all(db: sqlite_utils.Database) -> list[StoredResponse | None]:
        return [responses.get(db, "default", r.id) for r in records]

    assert database.run_sync(read_all) == records


async def test_a_group_is_committed_without_a_flush_and_every_other_write_keeps_its_own(
    database: Database,
) -> None:
    """The group's transaction runs under `synchronous = NORMAL`; the connection is back
    at its own setting (FULL) for whatever it writes next."""

    def traced(db: sqlite_utils.Database) -> int:
        db.conn.set_trace_callback(statements.append)
        return int(db.execute("PRAGMA synchronous").fetchone()[0])

    statements: list[str] = []
    own = database.run_sync(traced)
    assert own == 2  # FULL, as every gateway connection
    keeper = ResponseKeeper(database)
    await keeper.keep(record("r1"))
    async with trio.open_nursery() as nursery:
        await nursery.start(keeper.run)
        with trio.fail_after(5):
            while not await written(database, "r1"):  # noqa: ASYNC110 (a row, no event)
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    database.run_sync(lambda db: db.conn.set_trace_callback(None))
    group = statements[statements.index("PRAGMA synchronous = NORMAL") :]
    assert [s.split()[0] for s in group[1:3]] == ["BEGIN", "INSERT"]
    assert group[3:5] == ["COMMIT", f"PRAGMA synchronous = {own}"]
    assert database.run_sync(lambda db: db.execute("PRAGMA synchronous").fetchone()[0]) == own
