"""Stored responses: the Responses API's answers kept for `GET`, `input_items` and
`previous_response_id`.

A response belongs to one workspace; every read takes the workspace, so another
workspace's id answers exactly like an unknown one. A row holds the response object as
it was answered and its request's input items; a conversation is rebuilt by walking the
chain of `previous_response_id`s back to its start, so each turn is stored once. Rows hold
user content: they leave through `store.erasure` (`remove`, `remove_workspace`), which
clears the free pages and the WAL too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import sqlite_utils

from store.erasure import Removal

MAX_CHAIN = 10_000  # turns walked back at most (a chain is acyclic; this bounds a bad row)


@attrs.frozen(kw_only=True)
class StoredResponse:
    id: str
    workspace_id: str
    key_id: str
    previous_response_id: str | None
    created_at: int
    expires_at: int | None
    input_items: Sequence[Mapping[str, Any]]
    response: Mapping[str, Any]


class BrokenChain(Exception):
    """A response of the chain is missing (deleted, expired, or another workspace's)."""

    def __init__(self, response_id: str) -> None:
        super().__init__(response_id)
        self.response_id = response_id


def put(db: sqlite_utils.Database, record: StoredResponse) -> None:
    db.execute(
        "INSERT OR REPLACE INTO stored_responses (id, workspace_id, key_id, "
        "previous_response_id, created_at, expires_at, input_items, response) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            record.id,
            record.workspace_id,
            record.key_id,
            record.previous_response_id,
            record.created_at,
            record.expires_at,
            json.dumps(list(record.input_items), separators=(",", ":")),
            json.dumps(record.response, separators=(",", ":")),
        ],
    )


def get(db: sqlite_utils.Database, workspace_id: str, response_id: str) -> StoredResponse | None:
    row = db.execute(
        "SELECT id, workspace_id, key_id, previous_response_id, created_at, expires_at, "
        "input_items, response FROM stored_responses WHERE id = ? AND workspace_id = ?",
        [response_id, workspace_id],
    ).fetchone()
    if row is None:
        return None
    return StoredResponse(
        id=row[0],
        workspace_id=row[1],
        key_id=row[2],
        previous_response_id=row[3],
        created_at=row[4],
        expires_at=row[5],
        input_items=json.loads(row[6]),
        response=json.loads(row[7]),
    )


def conversation(
    db: sqlite_utils.Database, workspace_id: str, response_id: str
) -> list[dict[str, Any]]:
    """Every item of the conversation up to and including `response_id`'s output, oldest
    first: each turn's input items, then its output. Raises `BrokenChain` naming the
    first response of the chain that is not there."""
    turns: list[StoredResponse] = []
    wanted: str | None = response_id
    while wanted is not None and len(turns) < MAX_CHAIN:
        found = get(db, workspace_id, wanted)
        if found is None:
            raise BrokenChain(wanted)
        turns.append(found)
        wanted = found.previous_response_id
    items: list[dict[str, Any]] = []
    for turn in reversed(turns):
        items.extend(dict(item) for item in turn.input_items)
        items.extend(dict(item) for item in turn.response.get("output") or ())
    return items


def remove(
    db: sqlite_utils.Database, workspace_id: str, response_id: str
) -> Removal[str] | None:
    """`store.erasure`'s removal of one response; None when the workspace has none."""
    cursor = db.execute(
        "DELETE FROM stored_responses WHERE id = ? AND workspace_id = ?",
        [response_id, workspace_id],
    )
    return Removal(response_id) if cursor.rowcount > 0 else None


def remove_workspace(db: sqlite_utils.Database, workspace_id: str) -> int:
    """Every response of a workspace (its deletion, inside its erasure's transaction)."""
    cursor = db.execute("DELETE FROM stored_responses WHERE workspace_id = ?", [workspace_id])
    return int(cursor.rowcount)


def expired(db: sqlite_utils.Database, now: float) -> list[tuple[str, str]]:
    """(workspace id, response id) of every response whose retention ended by `now`."""
    rows = db.execute(
        "SELECT workspace_id, id FROM stored_responses WHERE expires_at IS NOT NULL "
        "AND expires_at <= ? ORDER BY expires_at LIMIT 1000",
        [now],
    ).fetchall()
    return [(row[0], row[1]) for row in rows]
