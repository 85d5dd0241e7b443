"""The worker that carries key changes between workers and nodes (revocations above all).

Each worker authenticates from its own in-memory `KeyRing`, so a key revoked, deleted,
rotated or changed on one worker must reach the others at once: the ring announces
every change (`KeyRing.on_change`), this worker publishes it on the Redis channel
`<prefix>keys`, and every worker (this one included) applies what it hears. A message is
`<key hash> <usable>`: an unusable key is dropped at once, without a store read (so a
node with its own store drops it too); a usable one is read again from the local store.

Messages are not stored by the server, so one missed while a worker was disconnected is
made up for by reloading every active key from the store each time the subscription is
(re)established. Only with `redis_url` set; otherwise the worker starts and returns.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from gateway.platform.resp import RedisClient, RedisReplyError, RedisUnavailable
from store import keys

if TYPE_CHECKING:
    from gateway.platform.state import AppState

logger = logging.getLogger(__name__)

QUEUE_SIZE = 1024
RECONNECT_S = 0.5
RELOAD_ALL = "*"


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Publish and apply key changes until cancelled."""
    client = state.redis
    if client is None:
        task_status.started()
        return
    channel = state.settings.redis_prefix + "keys"
    send, receive = trio.open_memory_channel[str](QUEUE_SIZE)

    def announce(key_hash: str, usable: bool) -> None:
        try:
            send.send_nowait(f"{key_hash} {int(usable)}")
        except trio.WouldBlock:
            # Only while the server has been away for long: every worker reloads all keys
            # when its subscription comes back, which covers what is dropped here.
            logger.warning("key change queue full; dropped until the server is back")

    state.keyring.on_change = announce
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_publish, state, client, channel, receive)
            await nursery.start(_listen, state, client, channel)
            task_status.started()
    finally:
        state.keyring.on_change = None


async def _publish(
    state: AppState, client: RedisClient, channel: str, receive: trio.MemoryReceiveChannel[str]
) -> None:
    """Send each change; one that cannot be sent now is retried until it is (with every
    later one behind it), since a lost revocation would leave a key usable elsewhere."""
    async for message in receive:
        while True:
            try:
                with trio.fail_after(state.settings.redis_timeout_s):
                    await client.publish(channel, message)
                break
            except (RedisUnavailable, RedisReplyError, trio.TooSlowError) as exc:
                logger.warning("could not publish a key change, retrying: %s", exc)
                await trio.sleep(RECONNECT_S)


async def _listen(
    state: AppState,
    client: RedisClient,
    channel: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Apply what is heard; reconnect (reloading every key) after the server went away.
    Ready once subscribed, or after the first failed attempt (the server may be down at
    start)."""
    ready = False
    while True:
        try:
            async with client.subscribe(channel) as subscription:
                await _reload_all(state)
                if not ready:
                    ready = True
                    task_status.started()
                async for message in subscription:
                    await _apply(state, message.decode(errors="replace"))
        except (RedisUnavailable, RedisReplyError) as exc:
            logger.warning("key change subscription lost, reconnecting: %s", exc)
        if not ready:
            ready = True
            task_status.started()
        await trio.sleep(RECONNECT_S)


async def _apply(state: AppState, message: str) -> None:
    key_hash, _, usable = message.partition(" ")
    if key_hash == RELOAD_ALL:
        await _reload_all(state)
        return
    if usable != "1":
        state.keyring.apply(key_hash, None)
        return
    record = await state.db.run(lambda d: keys.find_by_hash(d, key_hash))
    state.keyring.apply(
        key_hash, record if record is not None and record.status == "active" else None
    )


async def _reload_all(state: AppState) -> None:
    state.keyring.load(await state.db.run(keys.all_active))
