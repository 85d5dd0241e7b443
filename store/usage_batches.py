"""The ids of the usage batches already written (migration 26): what makes the usage
writer's resend of an unanswered batch idempotent (`gateway.workers.usage_process`).

`claim` runs inside the batch's transaction, before its rows: a batch id seen before
means the batch is already committed, and the caller writes nothing. The claim and the
rows commit or roll back together, so a child killed mid-batch leaves neither.
"""

from __future__ import annotations

import time

from store.handle import Handle

# How long a written batch's id is kept: a batch is sent again within seconds of its
# first try (the ack timeout and the restart backoff), a day is far past that.
KEEP_S = 24 * 3600
# Batches a writer writes between two `forget_old` (and one at its start), so the table
# holds about a day of ids.
FORGET_EVERY = 1000


def claim(db: Handle, batch_id: str, *, now: float | None = None) -> bool:
    """Record `batch_id` as written; False when it already was (the batch is a resend of
    one that committed). Call inside the batch's transaction."""
    epoch = int(time.time() if now is None else now)
    cursor = db.execute(
        "INSERT INTO usage_batches (id, written_epoch) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (batch_id, epoch),
    )
    return cursor.rowcount == 1


def forget_old(db: Handle, *, now: float | None = None) -> int:
    """Delete the ids older than `KEEP_S`; how many."""
    cutoff = int(time.time() if now is None else now) - KEEP_S
    with db.atomic():
        cursor = db.execute("DELETE FROM usage_batches WHERE written_epoch < ?", (cutoff,))
    return max(cursor.rowcount, 0)
