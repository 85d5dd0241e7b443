"""The PostgreSQL backend itself: migrations run once however many nodes open the store
at once, writers serialised across connections as SQLite serialises them, a bounded pool,
`Database.run`'s contract, the store's placeholders, and what an erasure leaves."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import trio
import trio.testing

from store import erasure
from store.db import TransactionLeakError, open_database
from store.migrations import POSTGRES_MIGRATIONS, apply_migrations, current_version
from store.pg_sql import placeholders
from store.postgres import PgHandle, connect
from store.postgres_db import PostgresDatabase, open_postgres
from tests.postgres_server import PostgresServer
from tests.store.test_documents_store import _document


@pytest.fixture
def url(postgres_server: PostgresServer) -> str:
    return postgres_server.new_database()


@pytest.fixture
def database(url: str) -> Iterator[PostgresDatabase]:
    db = open_postgres(url, size=2)
    yield db
    db.close()


def test_placeholders_outside_literals_become_psycopgs() -> None:
    assert placeholders("SELECT ? WHERE a = :name AND b LIKE 'x?%' AND c::text = ?") == (
        "SELECT %s WHERE a = %(name)s AND b LIKE 'x?%' AND c::text = %s"
    )
    assert placeholders('SELECT 5 % ?, "odd?name"') == 'SELECT 5 %% %s, "odd?name"'


def test_nodes_starting_together_migrate_once(url: str) -> None:
    opened: list[PostgresDatabase] = []

    def node() -> None:
        opened.append(open_postgres(url, size=1))

    threads = [threading.Thread(target=node) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(opened) == 4
        versions = opened[0].run_sync(
            lambda d: [r[0] for r in d.execute("SELECT version FROM schema_migrations")]
        )
        assert sorted(versions) == [version for version, _ in POSTGRES_MIGRATIONS]
        assert opened[3].run_sync(apply_migrations) == []
        assert opened[3].run_sync(current_version) == POSTGRES_MIGRATIONS[-1][0]
    finally:
        for db in opened:
            db.close()


def test_the_url_chooses_the_backend(url: str) -> None:
    db = open_database(None, url)
    try:
        assert db.backend == "postgres"
        ids = db.run_sync(lambda d: [r["id"] for r in d.query("SELECT id FROM workspaces")])
        assert ids == ["default"]
    finally:
        db.close()
    with pytest.raises(ValueError, match="postgresql://"):
        open_database(None, "mysql://somewhere/db")


def test_a_writer_waits_for_another_connections_transaction(database: PostgresDatabase) -> None:
    """Two connections (two nodes): the second's transaction starts only once the first
    committed, so a read-then-write inside one sees no write of the other in between."""
    holding, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first(d: Any) -> None:
        with d.atomic():
            d.execute("UPDATE workspaces SET name = 'first' WHERE id = 'default'")
            holding.set()
            release.wait(10)
            order.append("first commits")

    def second(d: Any) -> str:
        with d.atomic():
            order.append("second begins")
            name = d.execute("SELECT name FROM workspaces WHERE id = 'default'").fetchone()[0]
            return str(name)

    thread = threading.Thread(target=database.run_sync, args=(first,))
    thread.start()
    assert holding.wait(10)
    seen: list[str] = []
    waiter = threading.Thread(target=lambda: seen.append(database.run_sync(second)))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and order == []  # waiting for the write lock
    release.set()
    thread.join()
    waiter.join()
    assert order == ["first commits", "second begins"] and seen == ["first"]


async def test_calls_run_at_most_the_pools_size_at_once(database: PostgresDatabase) -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def slow(d: Any) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        d.execute("SELECT pg_sleep(0.05)")
        with lock:
            running -= 1

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(database.run, slow)
    assert most == 2


async def test_a_call_cancelled_while_waiting_never_runs(database: PostgresDatabase) -> None:
    ran: list[int] = []
    release = threading.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(2):  # both connections busy
            nursery.start_soon(database.run, lambda d: release.wait(10))
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(0.1):
            await database.run(lambda d: ran.append(1))
        release.set()
    assert ran == []


def test_a_transaction_left_open_is_an_error(database: PostgresDatabase) -> None:
    def leaky(d: PgHandle) -> None:
        d.pg.execute("BEGIN")
        d.execute("UPDATE workspaces SET name = 'leaked' WHERE id = 'default'")

    with pytest.raises(TransactionLeakError):
        database.run_sync(leaky)
    name = database.run_sync(
        lambda d: d.execute("SELECT name FROM workspaces WHERE id = 'default'").fetchone()[0]
    )
    assert name == "Default"


def _page_items_with(url: str, table: str, needle: bytes) -> int:
    """How many items of the table's heap pages (live or dead tuples) hold `needle`."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        pages = conn.execute(
            "SELECT pg_relation_size(%s::regclass) / current_setting('block_size')::int",
            [table],
        ).fetchone()
        assert pages is not None
        found = 0
        for page in range(int(pages[0])):
            rows = conn.execute(
                "SELECT t_data FROM heap_page_items(get_raw_page(%s, %s))", [table, page]
            ).fetchall()
            found += sum(1 for (data,) in rows if data is not None and needle in bytes(data))
        return found


async def test_an_erasure_leaves_no_tuple_of_the_content(url: str) -> None:
    """PostgreSQL keeps a deleted row's tuple in its page until a vacuum prunes it: the
    erasure's vacuum removes it (and its index entries) at once, not when autovacuum
    gets round to it."""
    db = open_postgres(url, size=1)
    try:
        record = await db.run(_document)
        needle = b"recipe for bread"
        assert _page_items_with(url, "data_chunks", needle) == 1

        def remove(d: Any) -> erasure.Removal[str] | None:
            from store import documents

            erased = documents.remove(d, "default", record.id)
            return None if erased is None else erasure.Removal(record.id)

        conn = connect(url)
        try:  # an idle session, as another node's would be: it must not hold the vacuum
            assert await erasure.erase(db, remove) == record.id
        finally:
            conn.close()
        assert _page_items_with(url, "data_chunks", needle) == 0
        left = await db.run(lambda d: d.execute("SELECT count(*) FROM data_chunks").fetchone())
        assert left[0] == 0
    finally:
        db.close()


@pytest.fixture(autouse=True)
def _only_with_a_server(request: pytest.FixtureRequest) -> None:
    """Every test here but the pure one needs the server (skipped as the fixture says)."""
    if request.node.name != "test_placeholders_outside_literals_become_psycopgs":
        request.getfixturevalue("postgres_server")
