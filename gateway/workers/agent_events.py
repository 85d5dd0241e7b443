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

import logging
from typing import TYPE_CHECKING

import trio

from gateway.agents.book import EVERY_AGENT
from gateway.platform.resp import RedisClient, RedisReplyError, RedisUnavailable

if TYPE_CHECKING:
    from gateway.platform.state import AppState

logger = logging.getLogger(__name__)

QUEUE_SIZE = 1024
RECONNECT_S = 0.5


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Publish and apply agent changes until cancelled."""
    client = state.redis
    if client is None:
        task_status.started()
        return
    channel = state.settings.redis_prefix + "agents"
    send, receive = trio.open_memory_channel[str](QUEUE_SIZE)

    def announce(agent_id: str) -> None:
        try:
            send.send_nowait(agent_id)
        except trio.WouldBlock:
            # Only while the server has been away for long: every process drops its
            # whole cache when its subscription comes back, which covers this.
            logger.warning("agent change queue full; dropped until the server is back")

    state.agents.on_change = announce
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_publish, state, client, channel, receive)
            await nursery.start(_listen, state, client, channel)
            task_status.started()
    finally:
        state.agents.on_change = None


async def _publish(
    state: AppState, client: RedisClient, channel: str, receive: trio.MemoryReceiveChannel[str]
) -> None:
    """Send each change; one that cannot be sent now is retried until it is (a lost one
    would leave a suspended agent running elsewhere)."""
    async for message in receive:
        while True:
            try:
                with trio.fail_after(state.settings.redis_timeout_s):
                    await client.publish(channel, message)
                break
            except (RedisUnavailable, RedisReplyError, trio.TooSlowError) as exc:
                logger.warning("could not publish an agent change, retrying: %s", exc)
                await trio.sleep(RECONNECT_S)


async def _listen(
    state: AppState,
    client: RedisClient,
    channel: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Apply what is heard; after a reconnection drop every cached agent. Ready once
    subscribed, or after the first failed attempt (the server may be down at start)."""
    ready = False
    while True:
        try:
            async with client.subscribe(channel) as subscription:
                state.agents.drop_all()
                if not ready:
                    ready = True
                    task_status.started()
                async for message in subscription:
                    apply(state, message.decode(errors="replace"))
        except (RedisUnavailable, RedisReplyError) as exc:
            logger.warning("agent change subscription lost, reconnecting: %s", exc)
        if not ready:
            ready = True
            task_status.started()
        await trio.sleep(RECONNECT_S)


def apply(state: AppState, agent_id: str) -> None:
    if agent_id == EVERY_AGENT:
        state.agents.drop_all()
    else:
        state.agents.drop(agent_id)
