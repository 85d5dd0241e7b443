"""The voice mapping book: the speech path's lookups answered from memory, the store
asked once per workspace and `TTL_S`, a change made here seen at once, and a load that
raced with a change never kept. Driven with a counting fake store at virtual times."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import trio
import trio.testing

from gateway.audio.mapping_book import TTL_S, VoiceMappingBook
from store.voice_mappings import VoiceMappingRecord

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def record(name: str, voice: str) -> VoiceMappingRecord:
    return VoiceMappingRecord(
        workspace_id="ws", name=name, mappings={"openai": voice}, created_at=NOW, updated_at=NOW
    )


class FakeStore:
    """`Database.run` over a list of records; `gate` (when set) holds each read open."""

    def __init__(self, *records: VoiceMappingRecord) -> None:
        self.records = list(records)
        self.reads = 0
        self.gate: trio.Event | None = None

    async def run(self, fn: Callable[[Any], Any]) -> Any:
        self.reads += 1
        snapshot = list(self.records)
        if self.gate is not None:
            await self.gate.wait()
        return snapshot


async def test_lookups_come_from_memory_until_the_entry_is_stale(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = FakeStore(record("brand", "nova"))
    book = VoiceMappingBook()
    assert await book.named(store, "ws", "brand") == {"openai": "nova"}  # type: ignore[arg-type]
    assert await book.named(store, "ws", "alloy") is None  # type: ignore[arg-type]
    await trio.sleep(TTL_S - 0.5)
    assert await book.named(store, "ws", "brand") == {"openai": "nova"}  # type: ignore[arg-type]
    assert store.reads == 1
    store.records = [record("brand", "echo")]  # changed by another worker
    await trio.sleep(0.5)
    assert await book.named(store, "ws", "brand") == {"openai": "echo"}  # type: ignore[arg-type]
    assert store.reads == 2


async def test_a_change_made_here_is_seen_at_once(autojump_clock: trio.testing.MockClock) -> None:
    store = FakeStore()
    book = VoiceMappingBook()
    assert await book.named(store, "ws", "brand") is None  # type: ignore[arg-type]
    store.records = [record("brand", "nova")]
    book.changed("ws")
    assert await book.named(store, "ws", "brand") == {"openai": "nova"}  # type: ignore[arg-type]
    assert store.reads == 2


async def test_a_load_that_raced_with_a_change_is_not_kept(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    store = FakeStore(record("brand", "nova"))
    store.gate = trio.Event()
    book = VoiceMappingBook()
    found: list[object] = []

    async def look() -> None:
        found.append(await book.named(store, "ws", "brand"))  # type: ignore[arg-type]

    nursery.start_soon(look)
    await trio.testing.wait_all_tasks_blocked()
    store.records = []
    book.changed("ws")  # deleted while the read above was under way
    store.gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert found == [{"openai": "nova"}]  # that request saw the store as it read it
    store.gate = None
    assert await book.named(store, "ws", "brand") is None  # type: ignore[arg-type]
    assert store.reads == 2


async def test_a_stale_entry_is_reloaded_once_and_answered_from_meanwhile(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """32 requests finding the entry stale at once make one store read, not 32: the
    first reloads, the others answer from the stale entry without waiting for it."""
    store = FakeStore(record("brand", "nova"))
    book = VoiceMappingBook()
    await book.named(store, "ws", "brand")  # type: ignore[arg-type]
    await trio.sleep(TTL_S)
    store.records = [record("brand", "echo")]
    store.gate = trio.Event()
    found: list[object] = []

    async def look() -> None:
        found.append(await book.named(store, "ws", "brand"))  # type: ignore[arg-type]

    nursery.start_soon(look)  # the one that reloads, held at the store
    await trio.testing.wait_all_tasks_blocked()
    with trio.fail_after(1):  # none of these may wait for the reload
        for _ in range(31):
            assert await book.named(store, "ws", "brand") == {"openai": "nova"}  # type: ignore[arg-type]
    assert store.reads == 2 and found == []
    store.gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert found == [{"openai": "echo"}]
    assert await book.named(store, "ws", "brand") == {"openai": "echo"}  # type: ignore[arg-type]
    assert store.reads == 2


async def test_requests_with_no_entry_wait_for_the_one_load(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    store = FakeStore(record("brand", "nova"))
    store.gate = trio.Event()
    book = VoiceMappingBook()
    found: list[object] = []

    async def look() -> None:
        found.append(await book.named(store, "ws", "brand"))  # type: ignore[arg-type]

    for _ in range(5):
        nursery.start_soon(look)
    await trio.testing.wait_all_tasks_blocked()
    store.gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert found == [{"openai": "nova"}] * 5
    assert store.reads == 1


async def test_a_waiter_loads_itself_when_the_load_it_waited_for_was_not_kept(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    store = FakeStore(record("brand", "nova"))
    store.gate = trio.Event()
    book = VoiceMappingBook()
    found: list[object] = []

    async def look() -> None:
        found.append(await book.named(store, "ws", "brand"))  # type: ignore[arg-type]

    nursery.start_soon(look)
    await trio.testing.wait_all_tasks_blocked()
    store.records = []
    book.changed("ws")  # deleted while the first read was under way
    nursery.start_soon(look)  # no entry: waits for the read in flight
    await trio.testing.wait_all_tasks_blocked()
    store.gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert sorted(map(str, found)) == ["None", "{'openai': 'nova'}"]
    assert store.reads == 2  # the waiter read again: the first load was not kept
