"""The database errors the store's callers handle, for both backends.

SQLite raises `sqlite3` errors and PostgreSQL psycopg's; a caller that turns a
constraint's refusal into an answer (a name taken, a duplicate id) or counts a failed
write catches `integrity_errors()` or `database_errors()` rather than one backend's
classes.

psycopg belongs to the `[postgres]` extra and is imported only by a PostgreSQL store
(`store.postgres`), so these are functions, asked when an error is caught: psycopg's
classes are in them once psycopg is loaded, and before that no psycopg error can have
been raised.
"""

from __future__ import annotations

import sqlite3
import sys
from types import ModuleType


def integrity_errors() -> tuple[type[Exception], ...]:
    """A constraint refused the change (unique, foreign key, check, not null)."""
    psycopg = _loaded_psycopg()
    if psycopg is None:
        return (sqlite3.IntegrityError,)
    return (sqlite3.IntegrityError, psycopg.IntegrityError)


def database_errors() -> tuple[type[Exception], ...]:
    """Any error of the database itself."""
    psycopg = _loaded_psycopg()
    if psycopg is None:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def is_unique_violation(error: BaseException) -> bool:
    """A UNIQUE index (or primary key) refused the row, not another constraint."""
    psycopg = _loaded_psycopg()
    if psycopg is not None and isinstance(error, psycopg.errors.UniqueViolation):
        return True
    return isinstance(error, sqlite3.IntegrityError) and "UNIQUE" in str(error)


def _loaded_psycopg() -> ModuleType | None:
    """psycopg with its `errors` module, if a PostgreSQL store has imported it."""
    if sys.modules.get("psycopg") is None:
        return None
    import psycopg.errors

    return psycopg
