"""Stored responses written behind their answers (`store.responses.ResponseKeeper`)."""

from __future__ import annotations

import trio

from store import responses
from store.db import Database
from store.responses import ResponseKeeper, StoredResponse


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
