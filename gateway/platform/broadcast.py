"""Changes carried between processes over a Redis channel: what one process changes is
published, and every process (itself included) applies what it hears.

The server does not store messages, so a process that was disconnected has missed some:
each time its subscription is (re)established it first resynchronises from the source of
truth (`resync`: its store, or the server's own record), then applies messages as they
come. Key revocations, agent changes and circuit-breaker transitions travel this way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial

import trio

from gateway.platform.config import Settings
from gateway.platform.resp import SERVER_FAILURES, RedisClient

logger = logging.getLogger(__name__)

QUEUE_SIZE = 1024
RECONNECT_S = 0.5

Announce = Callable[[str], None]


async def follow(
    client: RedisClient,
    channel: str,
    *,
    what: str,
    resync: Callable[[], Awaitable[None]],
    apply: Callable[[str], Awaitable[None]],
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Apply what is heard on `channel` until cancelled; reconnect (resynchronising) after
    the server went away. Ready once subscribed, or after the first failed attempt (the
    server may be down at start, and the caller must not wait for it)."""
    ready = False
    while True:
        try:
            async with client.subscribe(channel) as subscription:
                await resync()
                if not ready:
                    ready = True
                    task_status.started()
                async for message in subscription:
                    await apply(message.decode(errors="replace"))
        except SERVER_FAILURES as exc:
            logger.warning("%s subscription lost, reconnecting: %s", what, exc)
        if not ready:
            ready = True
            task_status.started()
        await trio.sleep(RECONNECT_S)


async def relay(
    client: RedisClient,
    channel: str,
    *,
    what: str,
    timeout_s: float,
    install: Callable[[Announce | None], None],
    resync: Callable[[], Awaitable[None]],
    apply: Callable[[str], Awaitable[None]],
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Publish this process's changes and `follow` everyone's, until cancelled.

    `install` is given the function that queues a change for publishing (it never blocks:
    the process's own state has changed already) and None when the relay ends. A full
    queue drops the change with a warning; that happens only while the server has been away
    long, and every process resynchronises when its subscription comes back.
    """
    send, receive = trio.open_memory_channel[str](QUEUE_SIZE)

    def announce(message: str) -> None:
        try:
            send.send_nowait(message)
        except trio.WouldBlock:
            logger.warning("%s change queue full; dropped until the server is back", what)

    install(announce)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_publish, client, channel, receive, what, timeout_s)
            await nursery.start(
                partial(follow, client, channel, what=what, resync=resync, apply=apply)
            )
            task_status.started()
    finally:
        install(None)


async def _publish(
    client: RedisClient,
    channel: str,
    receive: trio.MemoryReceiveChannel[str],
    what: str,
    timeout_s: float,
) -> None:
    """Send each change; one that cannot be sent now is retried until it is (with every
    later one behind it, so they arrive in order): a lost revocation or suspension would
    leave a key or an agent usable elsewhere."""
    async for message in receive:
        while True:
            try:
                with trio.fail_after(timeout_s):
                    await client.publish(channel, message)
                break
            except SERVER_FAILURES as exc:
                logger.warning("could not publish a %s change, retrying: %s", what, exc)
                await trio.sleep(RECONNECT_S)


async def relay_if_shared(
    client: RedisClient | None,
    settings: Settings,
    name: str,
    *,
    what: str,
    install: Callable[[Announce | None], None],
    resync: Callable[[], Awaitable[None]],
    apply: Callable[[str], Awaitable[None]],
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`relay` on the channel `<redis_prefix><name>` when the process has a server;
    without one (a single process) ready at once, with nothing to carry."""
    if client is None:
        task_status.started()
        return
    await relay(
        client,
        settings.redis_prefix + name,
        what=what,
        timeout_s=settings.redis_timeout_s,
        install=install,
        resync=resync,
        apply=apply,
        task_status=task_status,
    )
