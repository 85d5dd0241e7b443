"""Stored responses: the Responses API's answers kept for `GET`, `input_items` and
`previous_response_id`.

A response belongs to one workspace; every read takes the workspace, so another
workspace's id answers exactly like an unknown one. A row holds the response object as
it was answered and its request's input items; a conversation is rebuilt by walking the
chain of `previous_response_id`s back to its start, so each turn is stored once. Rows hold
user content: they leave through `store.erasure` (`erase_one`, `remove_workspace`), which
clears the free pages and the WAL too. Rows are written behind their answers by the usage
writer's process (`ResponseKeeper`; the row itself is `store.response_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from operator import attrgetter
from typing import Any, Protocol

import attrs
import orjson
import sqlite_utils
import trio

from store import dialect, erasure
from store.db import Database
from store.erasure import Removal
from store.handle import Handle
from store.response_rows import COLUMNS, StoredRow, put_rows, row_of

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


def put(db: Handle, record: StoredResponse) -> None:
    """Insert (or replace) one response, inside the caller's transaction."""
    put_rows(db, [row(record)])


def row(record: StoredResponse) -> StoredRow:
    """The record as the row the usage writer's process inserts, its JSON rendered once
    (`store.response_rows`)."""
    items, response = orjson.dumps(list(record.input_items)), orjson.dumps(record.response)
    return row_of((*_KEYS(record), items.decode(), response.decode()))


_KEYS = attrgetter(*COLUMNS[:6])  # the columns before the two JSON ones, from a record


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
    db: sqlite_utils.Database,
    workspace_id: str,
    response_id: str,
    pending: Mapping[str, StoredResponse] | None = None,
) -> list[dict[str, Any]]:
    """Every item of the conversation up to and including `response_id`'s output, oldest
    first: each turn's input items, then its output. `pending` (by id) are the workspace's
    responses kept but not yet written (`ResponseKeeper`). Raises `BrokenChain` naming the
    first response of the chain that is not there."""
    turns: list[StoredResponse] = []
    wanted: str | None = response_id
    while wanted is not None and len(turns) < MAX_CHAIN:
        found = (pending or {}).get(wanted) or get(db, workspace_id, wanted)
        if found is None:
            raise BrokenChain(wanted)
        turns.append(found)
        wanted = found.previous_response_id
    items: list[dict[str, Any]] = []
    for turn in reversed(turns):
        items.extend(dict(item) for item in turn.input_items)
        items.extend(dict(item) for item in turn.response.get("output") or ())
    return items


UNFINISHED = ("queued", "in_progress")


def fail_unfinished(db: sqlite_utils.Database, error: Mapping[str, Any]) -> int:
    """Mark every stored response still `queued` or `in_progress` (a background response
    whose process ended before it did) `failed` with `error`; how many. Run once at start,
    before any background response of this process is stored: nothing else is running."""
    status = dialect.of(db).json_member_text("response")
    rows = db.execute(
        f"SELECT id, response FROM stored_responses WHERE {status} IN (?, ?)",
        [*dialect.of(db).json_path("status"), *UNFINISHED],
    ).fetchall()
    with db.atomic():
        for response_id, text in rows:
            response = json.loads(text) | {"status": "failed", "error": dict(error)}
            db.execute(
                "UPDATE stored_responses SET response = ? WHERE id = ?",
                [orjson.dumps(response).decode(), response_id],
            )
    return len(rows)


def _remove(db: sqlite_utils.Database, workspace_id: str, response_id: str) -> Removal[str] | None:
    """`store.erasure`'s removal of one response; None when the workspace has none."""
    cursor = db.execute(
        "DELETE FROM stored_responses WHERE id = ? AND workspace_id = ?",
        [response_id, workspace_id],
    )
    return Removal(response_id) if cursor.rowcount > 0 else None


async def erase_one(
    db: Database, keeper: ResponseKeeper, workspace_id: str, response_id: str
) -> bool:
    """Erase a stored response (a request's DELETE, or retention) through `store.erasure`:
    no copy stays in the database's free pages or its WAL, and a kept one not yet written
    never will be. Whether there was one."""
    kept = keeper.forget(workspace_id, response_id)
    if kept:  # its row may be on its way to the writer: deleted once written
        await keeper.settle()
    remove = partial(_remove, workspace_id=workspace_id, response_id=response_id)
    return await erasure.erase(db, remove) is not None or kept


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


class RowWriter(Protocol):
    """Where kept responses' rows go to be written: the usage writer
    (`gateway.workers.usage_writer.UsageWriter`), whose batches carry them into the
    same transaction as the usage records, written by its own process."""

    async def keep_row(self, row: StoredRow, written: Callable[[], None]) -> None:
        """Queue `row` for the next batch, waiting while the queue is full; `written` is
        called once the batch is answered (committed, or refused and logged). Raises
        `trio.ClosedResourceError` once the writer is closed."""
        ...

    async def flush(self) -> None:
        """Wait until everything queued before this call is answered."""
        ...


class ResponseKeeper:
    """Stored responses written behind their answers, by the usage writer's process.

    `keep` renders the response's row once (orjson) and hands it to the usage writer
    (`RowWriter.keep_row`: a bounded channel send, no other await), whose next batch
    writes it in the transaction of its usage records, in its own process: no database
    work, no worker thread and no commit of its own in the gateway's process (a group of
    stored responses used to cost the gateway a thread hop and a transaction; under
    valgrind, one request at a time, that was 9 % of a request's instructions). Until
    its batch is answered the response is also held here, so `get` and `conversation`
    find it at once (read-your-writes within the workspace: a client that continues a
    response with its next request, or retrieves it, finds it); another worker of
    `--workers N` sees it once it is written. `forget` drops a held response (erasure)
    and `settle` waits for the rows already handed over, so an erasure deletes a row
    only after it is written. A clean shutdown loses nothing: the usage writer drains its
    queue (shielded, bounded); a crash loses the rows not yet written, as it loses the
    usage records.
    """

    def __init__(self, db: Database, writer: RowWriter) -> None:
        self._db = db
        self._writer = writer
        self._kept: dict[tuple[str, str], StoredResponse] = {}

    async def keep(self, record: StoredResponse) -> None:
        key, rendered = (record.workspace_id, record.id), row(record)
        self._kept[key] = record
        handed = False
        try:
            await self._writer.keep_row(rendered, partial(self._written, key, record))
            handed = True
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            await self._db.run(partial(_put_now, rendered=rendered))  # shutting down
        finally:
            if not handed:  # written directly, or cancelled waiting for room: not held
                self._written(key, record)

    def _written(self, key: tuple[str, str], record: StoredResponse) -> None:
        if self._kept.get(key) is record:  # not forgotten, nor kept again since
            del self._kept[key]

    def forget(self, workspace_id: str, response_id: str) -> bool:
        """Drop a response not yet written; whether there was one."""
        return self._kept.pop((workspace_id, response_id), None) is not None

    def forget_workspace(self, workspace_id: str) -> None:
        for key in [key for key in self._kept if key[0] == workspace_id]:
            del self._kept[key]

    async def settle(self) -> None:
        """Wait until every row handed to the writer before this call is answered."""
        await self._writer.flush()

    async def get(self, workspace_id: str, response_id: str) -> StoredResponse | None:
        kept = self._kept.get((workspace_id, response_id))
        if kept is not None:
            return kept
        return await self._db.run(lambda d: get(d, workspace_id, response_id))

    async def conversation(self, workspace_id: str, response_id: str) -> list[dict[str, Any]]:
        """`conversation`, the kept responses included."""
        kept = {key[1]: record for key, record in self._kept.items() if key[0] == workspace_id}
        return await self._db.run(lambda d: conversation(d, workspace_id, response_id, kept))


def _put_now(db: Handle, rendered: StoredRow) -> None:
    with db.atomic():
        put_rows(db, [rendered])
