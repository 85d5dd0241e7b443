"""Conversions between Python values and SQLite column values, shared by every table.

Identifiers are a type prefix and random hex. Timestamps are stored as ISO 8601 UTC
text with a fixed width (microseconds, `+00:00`), so that the text sorts in time order
and can be compared in SQL without parsing. Lists and objects are stored as JSON text.
Keeping these rules in one module means every aggregate reads back what another wrote;
`insert_row` writes a record's converted columns by name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from store.handle import Handle


def new_id(prefix: str) -> str:
    """A random identifier such as `key_3f9a...` (96 bits, hex so it is safe in URLs).

    `os.urandom` as `secrets.token_hex` calls it, without importing `secrets`: that brings
    hmac and hashlib, so OpenSSL's libcrypto (3.4 MiB resident) into the usage writer's
    child, which never makes an identifier."""
    return prefix + os.urandom(12).hex()


def to_iso(moment: datetime) -> str:
    """Fixed-width ISO 8601 UTC text for an aware datetime.

    A naive datetime is refused: guessing its zone would silently shift stored times.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"naive datetime {moment!r}: store times must be timezone-aware")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def to_epoch(moment: datetime) -> float:
    """Seconds since the Unix epoch, for indexed range queries; refuses naive datetimes."""
    to_iso(moment)  # same validation
    return moment.timestamp()


def to_iso_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else to_iso(moment)


def from_iso(text: str) -> datetime:
    """Parse stored text back into an aware UTC datetime."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def from_iso_or_none(text: str | None) -> datetime | None:
    return None if text is None else from_iso(text)


def to_json(value: object) -> str:
    """Compact, key-sorted JSON, so equal values give equal text."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object column, got {type(value).__name__}")
    return value


def json_strings(text: str) -> tuple[str, ...]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a JSON array of strings column")
    return tuple(value)


def str_tuple(values: Iterable[str]) -> tuple[str, ...]:
    """attrs converter: records keep sequences as tuples so a frozen record stays frozen."""
    if isinstance(values, str):
        raise TypeError("expected a sequence of strings, got a single string")
    return tuple(values)


def plain_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    """attrs converter: a private copy, so later changes to the caller's dict do not leak in."""
    return dict(value)


def without_rowid(row: Mapping[str, Any]) -> dict[str, Any]:
    """A `SELECT *` row's columns but `rowid`: PostgreSQL's tables carry the column that
    stands for SQLite's implicit rowid (`store.migrations.postgres_form.ROWID_TABLES`),
    which SQLite's `*` does not return."""
    return {name: value for name, value in row.items() if name != "rowid"}


def insert_row(db: Handle, table: str, row: Mapping[str, Any]) -> None:
    """INSERT `row` (column name -> stored value) into `table`, in one transaction; the
    column names come from our own records, never from a request."""
    names = ", ".join(f'"{name}"' for name in row)
    marks = ", ".join(f":{name}" for name in row)
    with db.atomic():
        db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", dict(row))


def insert_many(db: Handle, table: str, rows: Iterable[Mapping[str, Any]]) -> None:
    """INSERT rows of the same columns into `table`, in one transaction."""
    batch = [dict(row) for row in rows]
    if not batch:
        return
    names = ", ".join(f'"{name}"' for name in batch[0])
    marks = ", ".join(f":{name}" for name in batch[0])
    with db.atomic():
        db.conn.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", batch)
