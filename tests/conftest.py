"""Fixtures every test folder may use: migrated in-memory stores. Also the order in which
parallel test processes (pytest-xdist, `make unit`) take the tests: the longest first."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

import pytest
import sqlite_utils

from store.db import Database, open_database
from store.migrations import apply_migrations
from tests import speedups
from tests.postgres_server import PostgresServer, binaries

speedups.install()


# The files whose tests run longest (real processes, browsers, speech engines, fuzzing),
# longest first, from `pytest --durations`. Under pytest-xdist they are handed out before
# the rest, so that no worker starts a minute-long test while the others finish (a
# parallel run ends no sooner than its longest test starts plus its length). The list is
# only an order: a file missing from it still runs, after these.
LONGEST_FIRST = (
    "tests/operator/test_fuzz.py",
    "tests/install/test_core_install.py",
    "tests/scaleout/test_processes.py",
    "tests/hardening/test_connection_abuse.py",
    "tests/hardening/test_slow_clients.py",
    "tests/durability/test_fault_soak.py",
    "tests/scaleout/test_shared_limits.py",
    "tests/durability/test_kill9.py",
    "tests/operator/test_documented_answers.py",
    "tests/operator/test_console.py",
    "tests/gateway/test_organization_roles.py",
    "tests/gateway/test_connection_lifecycle.py",
    "tests/providers/test_local_engines.py",
    "tests/gateway/audio/test_local_audio_api.py",
    "tests/gateway/test_organization_isolation.py",
    "tests/gateway/test_organization_api.py",
    "tests/operator/test_openapi.py",
    "tests/durability/test_sigterm.py",
    "tests/gateway/pipelines/test_pipelines_api.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist only (each worker collects, and sorts, the same list), the files
    of `LONGEST_FIRST` first; a serial run keeps the files' own order."""
    if getattr(config.option, "numprocesses", None) in (None, 0) and not hasattr(
        config, "workerinput"
    ):
        return
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def migrated_sqlite() -> sqlite_utils.Database:
    """A migrated in-memory sqlite-utils database, foreign keys on."""
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    db.execute("PRAGMA foreign_keys = ON")
    apply_migrations(db)
    return db


@pytest.fixture
def sdb() -> Iterator[sqlite_utils.Database]:
    """A migrated in-memory sqlite-utils database, for the synchronous store functions."""
    db = migrated_sqlite()
    yield db
    db.close()


@pytest.fixture
def database() -> Iterator[Database]:
    db = open_database(None)
    yield db
    db.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server per test process; each test takes a database of its own
    (`PostgresServer.new_database`). Skipped where Debian's `postgresql` is not installed,
    except under `make test` (GATEWAY_TEST_POSTGRES=required), which installs it."""
    bin_dir = binaries()
    if bin_dir is None:
        reason = "PostgreSQL's server binaries are absent (Debian package `postgresql`)"
        if os.environ.get("GATEWAY_TEST_POSTGRES") == "required":
            pytest.fail(reason + ": `make test` should have installed them")
        pytest.skip(reason)
    server = PostgresServer(bin_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
