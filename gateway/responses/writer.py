"""The worker that writes stored responses behind their answers (`store.responses.
ResponseKeeper`): one transaction per group of kept responses, the rest on the way out."""

from __future__ import annotations

import trio

from store.responses import ResponseKeeper


async def run(
    keeper: ResponseKeeper, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Write until cancelled; the cancellation writes what is left (bounded)."""
    await keeper.run(task_status=task_status)
