"""The usage writer's own process: `python -m gateway.workers.usage_child DB_PATH`.

Why a process: a batch's Python work (rebuilding rows, rollups, latency sketches) held
the interpreter lock the event loop needs, so requests in flight beside a batch stalled
(issue 23; a thread's priority cannot change that, the lock is shared). Here the work
has an interpreter, and a lower CPU priority, of its own.

Plain synchronous code, no trio: read a framed batch from stdin
(`gateway.workers.usage_wire`), write it in one transaction through its own connection
to the same SQLite file (WAL; `store.usage.insert_records`: rows, rollups and sketches
together), answer on the acknowledgement pipe, repeat. End of input (the gateway closed
the pipe, or the gateway died: the kernel closes it then too) means: everything received
is written, so exit. So a gateway killed with SIGKILL loses only what was still in its
own memory; what reached the pipe is committed, and no writer outlives its gateway.

SIGINT and SIGTERM are ignored: a Ctrl-C or a service manager signals the whole process
group, and the writer must keep draining until its gateway closes the pipe (the gateway
kills it only past its shutdown grace period).
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from gateway.workers.usage_wire import (
    LOCKED_BACKOFF_S,
    LOCKED_RETRIES,
    POSTGRES_ARGUMENT,
    URL_VARIABLE,
    decode_batch,
    encode_ack,
    is_locked,
    read_frame,
)
from store import dialect, usage_batches
from store.errors import database_errors
from store.handle import Handle
from store.response_rows import StoredRow
from store.sqlite_handle import open_existing
from store.usage import UsageRecord, insert_records

logger = logging.getLogger("gateway.workers.usage_child")

# CPU priority of the writer: below the gateway's (nice 0), so a waking event loop gets
# the core first. Not SCHED_IDLE: the writer holds SQLite's write lock while it runs, and
# a starved lock holder would stall the gateway's own writes (priority inversion).
NICENESS = 10


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m gateway.workers.usage_child DB_PATH | postgres", file=sys.stderr)
        return 2
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="usage-writer[%(process)d] %(message)s"
    )
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _lower_priority()
    acks = _private_stdout()
    db = _open(argv[1])
    try:
        serve(sys.stdin.buffer, acks, db)
    finally:
        db.close()
    return 0


def _open(target: str) -> Handle:
    """The child's own connection: to the SQLite file the gateway migrated, or to the
    PostgreSQL store named by the environment (`URL_VARIABLE`)."""
    if target == POSTGRES_ARGUMENT:
        from store.postgres import PgHandle, connect  # psycopg: the `[postgres]` extra's

        return PgHandle(connect(os.environ[URL_VARIABLE]))
    return open_existing(Path(target))


def serve(batches: BinaryIO, acks: BinaryIO | None, db: Handle) -> None:
    """Write every batch read from `batches`, acknowledging each on `acks`, until the end
    of input. A gateway that stopped reading (it died) stops the acknowledgements, not
    the writing. A lost PostgreSQL connection ends the child (the gateway starts another,
    which connects again) once that batch is answered as failed."""
    forget_old_batches(db)
    served = 0
    while (payload := read_frame(batches)) is not None:
        seq, batch_id, records, responses = decode_batch(payload)
        written, error, seconds = write_batch(db, records, batch_id, responses)
        served += 1
        if served % usage_batches.FORGET_EVERY == 0:
            forget_old_batches(db)
        if _connection_lost(db):
            raise SystemExit(f"lost the PostgreSQL connection: {error}")
        if acks is None:
            continue
        try:
            acks.write(encode_ack(seq, written, error, seconds))
            acks.flush()
        except (BrokenPipeError, ValueError):
            logger.warning("the gateway stopped reading; writing what is left, then exiting")
            acks = None


def _connection_lost(db: Handle) -> bool:
    """A PostgreSQL connection that broke (a SQLite file's never does)."""
    if not dialect.of(db).is_postgres:
        return False
    from store.postgres import PgHandle

    return isinstance(db, PgHandle) and db.pg.broken


def write_batch(
    db: Handle,
    records: list[UsageRecord],
    batch_id: str | None = None,
    responses: Sequence[StoredRow] = (),
) -> tuple[int, str | None, float]:
    """One transaction; (records written, the error's text or None, seconds). A file
    locked past the busy timeout is tried again, backing off, like the thread writer.
    A batch whose id was written before (a resend of a batch the previous child committed
    but was killed before it answered) writes nothing and counts as written."""
    began = time.perf_counter()
    for attempt in range(LOCKED_RETRIES + 1):
        try:
            if insert_records(db, records, batch_id=batch_id, responses=responses) == 0 and records:
                logger.warning("batch %s was already written; not written again", batch_id)
        except sqlite3.OperationalError as exc:
            if not is_locked(exc) or attempt == LOCKED_RETRIES:
                return _refused(exc, records, began)
            logger.warning("usage log locked by another writer; retrying the batch")
            time.sleep(LOCKED_BACKOFF_S * (attempt + 1))
        except database_errors() as exc:
            return _refused(exc, records, began)
        else:
            return len(records), None, time.perf_counter() - began
    raise AssertionError("unreachable")  # pragma: no cover


def forget_old_batches(db: Handle) -> None:
    """Delete the batch ids past their keeping time (`store.usage_batches.KEEP_S`): at
    the child's start and every `usage_batches.FORGET_EVERY` batches, so the table stays
    small."""
    try:
        usage_batches.forget_old(db)
    except database_errors() as exc:  # a later sweep tries again; the batches go on
        logger.warning("could not delete old usage batch ids: %s", exc)


def _refused(exc: Exception, records: list[UsageRecord], began: float) -> tuple[int, str, float]:
    logger.error("could not write %d usage records: %s", len(records), exc)
    return 0, f"{type(exc).__name__}: {exc}", time.perf_counter() - began


def _private_stdout() -> BinaryIO:
    """The acknowledgement pipe, moved off fd 1 so that a stray print (a library's
    warning) goes to stderr instead of corrupting the frames."""
    acks = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return acks


def _lower_priority() -> None:
    try:
        os.nice(NICENESS)
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError) as exc:  # not Linux, or not allowed: still correct
        logger.info("could not lower the writer's priority: %s", exc)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
