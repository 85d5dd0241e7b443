"""Fixtures every test folder may use: migrated in-memory stores."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
import sqlite_utils

from store.db import Database, open_database
from store.migrations import apply_migrations
from tests import speedups

speedups.install()


@pytest.fixture
def sdb() -> Iterator[sqlite_utils.Database]:
    """A migrated in-memory sqlite-utils database, for the synchronous store functions."""
    conn = sqlite3.connect(":memory:")
    db = sqlite_utils.Database(conn)
    db.execute("PRAGMA foreign_keys = ON")
    apply_migrations(db)
    yield db
    db.close()


@pytest.fixture
def database() -> Iterator[Database]:
    db = open_database(None)
    yield db
    db.close()
