"""The worker that carries agent changes between workers and nodes.

Each process caches its agents with their effective limits (`gateway.agents.book`), so a
change made on one (an organisation's limits, an agent's limits, a suspension or
resumption, a deletion) must reach the others: the book announces it (`on_change`),
this worker publishes it on the Redis channel `<prefix>agents`, and every process (this
one included) drops the named agent (`*`: every agent) from its cache, to be read again
from the store at its next request. A message is the agent id, or `*`.

Messages are not stored by the server, so every cached agent is dropped each time the
subscription is (re)established. Only with `redis_url` set; otherwise the worker starts
and returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from gateway.agents.book import EVERY_AGENT
from gateway.platform import broadcast

if TYPE_CHECKING:
    from gateway.agents.services import AgentsServices


async def run(
    services: AgentsServices, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Publish and apply agent changes until cancelled."""
    client = services.redis
    if client is None:
        task_status.started()
        return

    def install(announce: broadcast.Announce | None) -> None:
        services.agents.on_change = announce

    async def resync() -> None:
        services.agents.drop_all()

    async def heard(agent_id: str) -> None:
        apply(services, agent_id)

    await broadcast.relay(
        client,
        services.settings.redis_prefix + "agents",
        what="agent",
        timeout_s=services.settings.redis_timeout_s,
        install=install,
        resync=resync,
        apply=heard,
        task_status=task_status,
    )


def apply(services: AgentsServices, agent_id: str) -> None:
    if agent_id == EVERY_AGENT:
        services.agents.drop_all()
    else:
        services.agents.drop(agent_id)
