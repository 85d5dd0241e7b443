"""The trace exporter: finished spans to the OTLP endpoint, in batches.

Runs only when tracing is on (`otlp_endpoint`); see `gateway.platform.tracing.Tracing`
for the queue and the export. Cancellation (the lifespan ending) sends what is queued,
for at most `otlp_timeout_s`, then shuts the exporter down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from gateway.platform.state import AppState


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    task_status.started()
    if state.tracing is not None:
        await state.tracing.export_loop(timeout_s=state.settings.otlp_timeout_s)
