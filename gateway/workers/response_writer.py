"""The worker that writes stored responses behind their answers (`store.responses.
ResponseKeeper`): one transaction per group of kept responses, the rest on the way out."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from gateway.platform.state import AppState


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Write until cancelled; the cancellation writes what is left (bounded)."""
    await state.responses.run(task_status=task_status)
