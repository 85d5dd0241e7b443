from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from store.handle import Handle
from store.postgres import PgHandle, connect
from store.postgres_db import migrate
from tests import speedups
from tests.conftest import migrated_sqlite
from tests.postgres_server import PostgresServer

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _real_migrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests prove the migrations and `open_database` themselves: every database
    here is migrated for real, never copied from the test process's template."""
    monkeypatch.setattr(speedups.Template, "enabled", False)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """Every store test that takes `sdb` runs on both backends."""
    return str(request.param)


@pytest.fixture
def sdb(backend: str, request: pytest.FixtureRequest) -> Iterator[Handle]:
    """A migrated store handle: an in-memory SQLite database, or a fresh PostgreSQL
    database on the session's server (migrated for real, each test its own)."""
    if backend == "sqlite":
        db = migrated_sqlite()
        yield db
        db.close()
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.new_database()
    migrate(url)
    handle = PgHandle(connect(url))
    yield handle
    handle.close()
