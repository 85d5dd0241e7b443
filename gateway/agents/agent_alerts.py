"""The worker that turns agents' spending into limit-warning webhooks.

Settling an agent's request queues a notice (`AgentBook.notify`, bounded, never
waiting); this worker reads the notices, computes which thresholds of the agent's alerts
are crossed (`gateway.agents.alerts`), claims each crossing once per limit period in the
store, and hands the claimed ones to the status family's signed, retried, SSRF-safe
delivery (`gateway.kernels.webhooks.notify.alert_delivery`). Cancellation ends it between notices
or during a store call; a claimed crossing whose delivery was not queued yet is lost with
the process (at most once, never twice).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import trio

from gateway.agents.alerts import Crossing, crossings, payload
from gateway.agents.book import Notice
from gateway.kernels.webhooks.notify import alert_delivery
from store import agents as agent_store

if TYPE_CHECKING:
    from gateway.agents.services import AgentsServices

logger = logging.getLogger(__name__)


async def run(
    services: AgentsServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Check every notice until cancelled."""
    task_status.started()
    async for notice in services.agents.notices:
        try:
            await check(services, notice)
        except Exception:
            # One agent's failure (a store error, an unreadable secret) must not stop the
            # alerts of every other; trio.Cancelled is not an Exception.
            logger.exception("limit-warning check for agent %s failed", notice.agent_id)


async def check(services: AgentsServices, notice: Notice) -> None:
    """Fire the thresholds this notice's agent has newly crossed."""
    agent_id = notice.agent_id
    alerts = await services.db.run(lambda d: agent_store.list_alerts(d, agent_id))
    if not alerts:
        return
    loaded = await services.agents.get(agent_id)
    if loaded is None:
        return
    figures = await services.agents.figures(loaded, notice.session)
    now = datetime.now(UTC)
    for crossing in list(crossings(alerts, loaded, figures, notice.session, now)):
        if not await _claim(services, crossing, now):
            continue
        await alert_delivery(
            services.webhooks,
            workspace_id=crossing.alert.workspace_id,
            alert_id=crossing.alert.id,
            url=crossing.alert.webhook_url,
            encrypted_secret=crossing.alert.encrypted_secret,
            event="limit_warning",
            payload=payload(crossing, agent_id, now),
            now=now,
        )


async def _claim(services: AgentsServices, crossing: Crossing, now: datetime) -> bool:
    """Record the firing; False when this threshold already fired in its period."""
    return await services.db.run(
        lambda d: agent_store.claim_firing(
            d, crossing.alert.id, crossing.limit_type, crossing.threshold, crossing.period, now
        )
    )
