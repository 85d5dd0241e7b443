"""Where the usage writer's batches go: the `BatchSink` protocol and its thread version.

`UsageWriter` (gateway.workers.usage_writer) owns the queue, the batching, `flush()` and
the counters; a sink only writes one batch at a time. Two sinks exist:

- `ThreadSink`: `insert_records` through the gateway's own connection in a worker thread
  (`Database.run`). Its Python work shares the event loop's interpreter lock, so it can
  stall requests beside a batch (issue 23); it is what an in-memory database (tests) and
  `GATEWAY_USAGE_WRITER=thread` use.
- `ProcessSink` (gateway.workers.usage_process): a child process with its own
  interpreter and connection, the default of `gateway serve`.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Sequence
from functools import partial
from typing import Protocol

import trio

from gateway.workers.usage_wire import LOCKED_BACKOFF_S, LOCKED_RETRIES, is_locked
from store import usage_batches
from store.db import Database
from store.errors import database_errors
from store.response_rows import StoredRow
from store.usage import UsageRecord, insert_records

logger = logging.getLogger(__name__)


class BatchFailed(Exception):
    """A batch that was not written (the database refused it, or the writer process
    died holding it); the writer counts its records in `failed` and goes on."""


class BatchSink(Protocol):
    async def start(self) -> None:
        """Get ready to write (called by the writer's task, which owns the sink)."""

    async def write(
        self, batch: list[UsageRecord], batch_id: str, responses: Sequence[StoredRow] = ()
    ) -> float:
        """Commit `batch` (and the stored responses' rows it carries, `responses`) in one
        transaction; return the seconds the write took.

        `batch_id` names the batch: a batch written again under the same id (after a
        cancelled or lost write) is committed at most once (`store.usage_batches`).

        Raises `BatchFailed` (or `sqlite3.Error`) if it was not written. Once started,
        the write runs to completion even if the caller is cancelled (the cancellation
        is raised afterwards), so a normal return always means "committed".
        """

    async def aclose(self) -> None:
        """Finish: everything written has been committed. Bounded by the caller."""


class ThreadSink:
    """`insert_records` in a worker thread through the gateway's one connection."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._batches = 0

    async def start(self) -> None:
        await self._forget_old()

    async def _forget_old(self) -> None:
        """Delete the batch ids past their keeping time: at the start and every
        `usage_batches.FORGET_EVERY` batches (the process sink's child does the same)."""
        try:
            await self._database.run(usage_batches.forget_old)
        except database_errors() as exc:  # a later sweep tries again; the batches go on
            logger.warning("could not delete old usage batch ids: %s", exc)

    async def write(
        self, batch: list[UsageRecord], batch_id: str, responses: Sequence[StoredRow] = ()
    ) -> float:
        """One batch; a database still locked after SQLite's busy timeout (another
        worker of `--workers N` holding a long write) is tried again `LOCKED_RETRIES`
        times, backing off, before the batch counts as failed."""
        began = time.perf_counter()
        for attempt in range(LOCKED_RETRIES + 1):
            try:
                await self._database.run(
                    partial(insert_records, records=batch, batch_id=batch_id, responses=responses)
                )
                self._batches += 1
                if self._batches % usage_batches.FORGET_EVERY == 0:
                    await self._forget_old()
                return time.perf_counter() - began
            except sqlite3.OperationalError as exc:
                if not is_locked(exc) or attempt == LOCKED_RETRIES:
                    raise
                logger.warning("usage log locked by another writer; retrying the batch")
            await trio.sleep(LOCKED_BACKOFF_S * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        return None
