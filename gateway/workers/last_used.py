"""The worker that writes keys' last-use times, every few seconds and once on the way out.

Authentication notes each use in memory (`KeyRing`), so the request path never writes to
the store; this worker persists the notes in one statement per flush.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from store import keys

if TYPE_CHECKING:
    from gateway.platform.auth import KeyRing
    from store.db import Database

FLUSH_EVERY_S = 5.0
FINAL_WRITE_DEADLINE_S = 2.0


async def run(
    keyring: KeyRing,
    db: Database,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Flush until cancelled; the cancellation writes once more, shielded for at most
    `FINAL_WRITE_DEADLINE_S`."""
    task_status.started()
    try:
        while True:
            await trio.sleep(FLUSH_EVERY_S)
            await write_last_used(keyring, db)
    finally:
        with trio.move_on_after(FINAL_WRITE_DEADLINE_S, shield=True):
            await write_last_used(keyring, db)


async def write_last_used(keyring: KeyRing, db: Database) -> None:
    taken = keyring.take_last_used()
    if taken:
        await db.run(lambda d: keys.touch_last_used(d, taken))
