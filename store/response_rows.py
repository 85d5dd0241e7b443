"""A stored response as the row it is written as (no trio, no event loop): what the
gateway renders once when it keeps a response, and what the usage writer's process
inserts in its batch's transaction (`store.usage.insert_records`).

A row is the `COLUMNS` values with the response object and the input items already
JSON text (orjson, rendered once in the gateway), so the writer's side is one statement
per row and no Python object is rebuilt. A row is inserted only while its workspace
exists: a workspace deleted while its last responses were still on their way to the
writer keeps none of them (its erasure and the writer's transaction are serialized by
the database's write lock, so whichever commits second sees the other's result).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from store.handle import Handle

COLUMNS = (
    "id",
    "workspace_id",
    "key_id",
    "previous_response_id",
    "created_at",
    "expires_at",
    "input_items",
    "response",
)
StoredRow = tuple[str, str, str, str | None, int, int | None, str, str]

_INSERT = (
    f"INSERT INTO stored_responses ({', '.join(COLUMNS)}) "
    # the integers cast: PostgreSQL types a bare parameter of a SELECT list (a NULL) as text
    "SELECT ?, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT), ?, ? "
    "WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ?)"
    " ON CONFLICT (id) DO UPDATE SET input_items = excluded.input_items, "
    "response = excluded.response, expires_at = excluded.expires_at"
)


def row_of(values: Sequence[Any]) -> StoredRow:
    """A row read back from the wire (a JSON array), checked for its length."""
    if len(values) != len(COLUMNS):
        raise ValueError(f"a stored response row has {len(COLUMNS)} values, not {len(values)}")
    return tuple(values)


def put_rows(db: Handle, rows: Sequence[StoredRow]) -> None:
    """Insert (or replace) `rows` whose workspace still exists; inside the caller's
    transaction."""
    for row in rows:
        db.execute(_INSERT, [*row, row[1]])
