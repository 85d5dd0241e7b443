"""Numbered schema migrations, applied in order when the database opens.

Each migration is a SQL script with a version number, in SQLite's dialect (`SCRIPT`), and
its PostgreSQL form: the module's own `POSTGRES` where it has one, else `SCRIPT` rewritten
by `store.migrations.postgres_form` (types, identity columns, no `WITHOUT ROWID`). The
versions already applied are recorded in `schema_migrations`; opening a database applies
only the missing ones, each in its own transaction together with its bookkeeping row, so
a crash mid-migration leaves the previous version intact. Migrations are append-only:
never edit a released one, add a new version instead.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from datetime import UTC, datetime

from store import dialect, latency_sketch
from store.columns import to_iso
from store.handle import Handle
from store.migrations import postgres_form

_MODULE_NAME = re.compile(r"v(\d+)_\w+")


def _discover(postgres: bool) -> tuple[tuple[int, str], ...]:
    """Every `vNN_<name>` module of this package, as (NN, its script in SQLite's or
    PostgreSQL's form), in version order.

    A new migration is a new module and nothing else, so two changes that each add one
    touch no shared file; `_check_ordering` catches two modules claiming one version.
    """
    found: list[tuple[int, str]] = []
    for module in pkgutil.iter_modules(__path__):
        match = _MODULE_NAME.fullmatch(module.name)
        if match is not None:
            loaded = importlib.import_module(f"{__name__}.{module.name}")
            script = loaded.SCRIPT
            if postgres:
                script = getattr(loaded, "POSTGRES", None) or postgres_form.translate(script)
            found.append((int(match.group(1)), script))
    return tuple(sorted(found))


MIGRATIONS: tuple[tuple[int, str], ...] = _discover(postgres=False)
"""(version, SQL script) pairs, versions strictly increasing from 1.

Versions are handed out to changes made side by side, so one may land before a lower one
(v20 before v19): a gap is allowed, and a database gets every migration it has not
recorded, whatever its number."""

POSTGRES_MIGRATIONS: tuple[tuple[int, str], ...] = _discover(postgres=True)
"""The same versions in PostgreSQL's form."""

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
)
"""


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer version of the gateway than this one."""


def current_version(db: Handle) -> int:
    """The highest applied migration version, 0 for a fresh database."""
    return max(applied_versions(db), default=0)


def applied_versions(db: Handle) -> set[int]:
    db.execute(_BOOKKEEPING)
    return {int(row[0]) for row in db.execute("SELECT version FROM schema_migrations")}


def apply_migrations(
    db: Handle,
    migrations: tuple[tuple[int, str], ...] | None = None,
) -> list[int]:
    """Apply the migrations not yet recorded (by default those of the handle's dialect);
    return the versions applied now.

    Idempotent: a second call on the same database applies nothing. On SQLite the SQL
    functions the scripts may call (`latency_sketch`) are defined on the connection first.
    """
    postgres = dialect.of(db).is_postgres
    if migrations is None:
        migrations = POSTGRES_MIGRATIONS if postgres else MIGRATIONS
    if not postgres:
        latency_sketch.register(db.conn)
    _check_ordering(migrations)
    recorded = applied_versions(db)
    applied_up_to = max(recorded, default=0)
    known = migrations[-1][0] if migrations else 0
    if applied_up_to > known:
        raise SchemaTooNewError(
            f"database schema is at version {applied_up_to}, this code knows up to {known}"
        )
    applied: list[int] = []
    for version, script in migrations:
        if version in recorded:
            continue
        with db.atomic():
            db.executescript(script)
            db.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                [version, to_iso(datetime.now(UTC))],
            )
        applied.append(version)
    return applied


def _check_ordering(migrations: tuple[tuple[int, str], ...]) -> None:
    versions = [version for version, _ in migrations]
    if not versions or versions[0] != 1 or versions != sorted(set(versions)):
        raise ValueError(
            f"migration versions must start at 1 and increase in order, got {versions}"
        )
