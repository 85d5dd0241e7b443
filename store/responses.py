"""Stored responses: the Responses API's answers kept for `GET`, `input_items` and
`previous_response_id`.

A response belongs to one workspace; every read takes the workspace, so another
workspace's id answers exactly like an unknown one. A row holds the response object as
it was answered and its request's input items; a conversation is rebuilt by walking the
chain of `previous_response_id`s back to its start, so each turn is stored once. Rows hold
user content: they leave through `store.erasure` (`erase_one`, `remove_workspace`), which
clears the free pages and the WAL too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import Any

import attrs
import orjson
import sqlite_utils
import trio

from store import dialect, erasure
from store.db import Database
from store.erasure import Removal

MAX_CHAIN = 10_000  # turns walked back at most (a chain is acyclic; this bounds a bad row)
KEEP_CAPACITY = 1024  # responses queued and not yet written, at most (then `keep` waits)
FINAL_WRITE_DEADLINE_S = 5.0
# How long the writer gathers responses after the first of a group: one transaction (one
# disk flush) per group, not per response. At one request at a time a flush per response
# cost ~1 ms of CPU each (the door at 0.65x chat's requests/s); 50 ms is the usage
# writer's group commit too.
GROUP_WINDOW_S = 0.05

logger = logging.getLogger(__name__)


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
ROWS_PER_INSERT = 100  # 800 parameters a statement: under every SQLite's limit
_UPSERT = (
    " ON CONFLICT (id) DO UPDATE SET input_items = excluded.input_items, "
    "response = excluded.response, expires_at = excluded.expires_at"
)


def put(db: sqlite_utils.Database, record: StoredResponse) -> None:
    put_many(db, [record])


def put_many(db: sqlite_utils.Database, records: Sequence[StoredResponse]) -> None:
    """Insert (or replace) `records` with one multi-row statement per `ROWS_PER_INSERT`:
    one call into the database for a whole group, not a call per row (each call drops
    and takes back the interpreter lock the event loop needs)."""
    for start in range(0, len(records), ROWS_PER_INSERT):
        chunk = records[start : start + ROWS_PER_INSERT]
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
        params = [value for record in chunk for value in _row(record)]
        db.execute(
            f"INSERT INTO stored_responses ({', '.join(COLUMNS)}) VALUES {values}{_UPSERT}",
            params,
        )


@contextmanager
def flushed_later(db: sqlite_utils.Database) -> Iterator[None]:
    """A group of stored responses committed without a disk flush of its own (SQLite's
    `synchronous = NORMAL` for its transaction, the connection's own setting restored
    after it, for every other write).

    Why: the store's connection commits with `synchronous = FULL`, an fsync per commit,
    which doubled the CPU a written response cost (21 against 11 us per response in
    groups of 35, 44 against 20 in groups of 10) and held the database's one handle for
    6-7 ms per group against ~1. Stored responses are written behind their answers
    already: a killed process loses the group not yet written. In WAL mode a commit
    without the flush survives a killed process too; only a power loss or an OS crash can
    take back the last groups before the next flush (anyone's commit, or a checkpoint),
    the same kind of loss the write-behind accepts. Keys, usage and the rest keep FULL.
    """
    previous = int(db.execute("PRAGMA synchronous").fetchone()[0])
    db.execute("PRAGMA synchronous = NORMAL")
    try:
        yield
    finally:
        db.execute(f"PRAGMA synchronous = {previous}")


def _row(record: StoredResponse) -> tuple[Any, ...]:
    return (
        record.id,
        record.workspace_id,
        record.key_id,
        record.previous_response_id,
        record.created_at,
        record.expires_at,
        orjson.dumps(list(record.input_items)).decode(),
        orjson.dumps(record.response).decode(),
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


class ResponseKeeper:
    """Stored responses written behind their answers, in groups.

    The store's connection commits with `synchronous = FULL`: a write per response put a
    disk flush (milliseconds) between every answer and its client. `keep` makes a response
    readable at once (`get`, `conversation` read the kept ones first, so a client that
    continues it with its next request finds it: read-your-writes within the workspace)
    and queues it; `run`, owned by the server's lifespan, wakes `GROUP_WINDOW_S` after the
    first response of a group and writes every queued one in one transaction, one
    multi-row statement (`put_many`). `keep` costs a list append: no channel, no task
    woken per response (the writer used to be woken by each one, about half of what a
    stored response cost the gateway's CPU). The queue is bounded: past `capacity`,
    `keep` waits for the next group to be written. `forget` drops a kept response before
    it is written (erasure: the writer skips what is no longer kept). A crash loses the
    responses not yet written, as the usage log's write-behind does; another worker of
    `--workers N` sees a response once it is written.

    Cancellation: `keep` waiting for room is cancelled at once (nothing kept). `run`'s
    cancellation writes what is queued, shielded for at most `FINAL_WRITE_DEADLINE_S`.
    """

    def __init__(self, db: Database, *, capacity: int = KEEP_CAPACITY) -> None:
        self._db = db
        self._capacity = capacity
        self._kept: dict[tuple[str, str], StoredResponse] = {}
        self._queued: list[StoredResponse] = []
        self._arrived = trio.Event()  # set by the first response of a group
        self._group_written = trio.Event()  # set (and replaced) after each group

    async def keep(self, record: StoredResponse) -> None:
        while len(self._queued) >= self._capacity:  # the writer is behind: its next group
            await self._group_written.wait()
        self._kept[(record.workspace_id, record.id)] = record
        self._queued.append(record)
        self._arrived.set()

    def forget(self, workspace_id: str, response_id: str) -> bool:
        """Drop a response not yet written; whether there was one."""
        return self._kept.pop((workspace_id, response_id), None) is not None

    def forget_workspace(self, workspace_id: str) -> None:
        for key in [key for key in self._kept if key[0] == workspace_id]:
            del self._kept[key]

    async def get(self, workspace_id: str, response_id: str) -> StoredResponse | None:
        kept = self._kept.get((workspace_id, response_id))
        if kept is not None:
            return kept
        return await self._db.run(lambda d: get(d, workspace_id, response_id))

    async def conversation(self, workspace_id: str, response_id: str) -> list[dict[str, Any]]:
        """`conversation`, the kept responses included."""
        kept = {key[1]: record for key, record in self._kept.items() if key[0] == workspace_id}
        return await self._db.run(lambda d: conversation(d, workspace_id, response_id, kept))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write kept responses, a group at a time, until cancelled (see the class)."""
        task_status.started()
        try:
            while True:
                await self._arrived.wait()
                await trio.sleep(GROUP_WINDOW_S)  # the rest of the group comes meanwhile
                self._arrived = trio.Event()  # no checkpoint from here to the take
                await self._write(self._queued)
        finally:
            with trio.move_on_after(FINAL_WRITE_DEADLINE_S, shield=True):
                await self._write(self._queued)

    async def _write(self, queued: list[StoredResponse]) -> None:
        """One transaction for the queued responses still kept; they then leave memory
        (a failed write is logged and dropped too: an answer is never held back by its
        record). The queue is emptied only once the write returned, so a cancellation
        while waiting for the database leaves it for the final write."""

        def still_kept(record: StoredResponse) -> bool:
            return self._kept.get((record.workspace_id, record.id)) is record

        def write(db: sqlite_utils.Database) -> list[StoredResponse]:
            with flushed_later(db) if sqlite else nullcontext(), db.atomic():
                written = [record for record in batch if still_kept(record)]
                put_many(db, written)
            return written

        sqlite = self._db.backend == "sqlite"

        batch = list(queued)
        if batch:
            try:
                await self._db.run(write)
            except Exception:
                logger.exception("stored responses: %d could not be written", len(batch))
        del queued[: len(batch)]  # kept since are behind these: they stay queued
        for record in batch:
            if still_kept(record):
                del self._kept[(record.workspace_id, record.id)]
        self._group_written.set()
        self._group_written = trio.Event()
