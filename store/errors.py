"""The database errors the store's callers handle, for both backends.

SQLite raises `sqlite3` errors and PostgreSQL psycopg's; a caller that turns a
constraint's refusal into an answer (a name taken, a duplicate id) or counts a failed
write catches these tuples rather than one backend's classes.
"""

from __future__ import annotations

import sqlite3

import psycopg
from psycopg import errors as pg_errors

IntegrityError: tuple[type[Exception], ...] = (sqlite3.IntegrityError, psycopg.IntegrityError)
"""A constraint refused the change (unique, foreign key, check, not null)."""

DatabaseError: tuple[type[Exception], ...] = (sqlite3.Error, psycopg.Error)
"""Any error of the database itself."""


def is_unique_violation(error: BaseException) -> bool:
    """A UNIQUE index (or primary key) refused the row, not another constraint."""
    if isinstance(error, pg_errors.UniqueViolation):
        return True
    return isinstance(error, sqlite3.IntegrityError) and "UNIQUE" in str(error)
