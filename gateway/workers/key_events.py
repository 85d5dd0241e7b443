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

from collections.abc import Callable
from functools import partial

import attrs
import trio

from gateway.platform import broadcast
from gateway.platform.auth import KeyRing
from gateway.platform.config import Settings
from gateway.platform.resp import RedisClient
from store import keys
from store.db import Database

RELOAD_ALL = "*"


@attrs.frozen
class KeySync:
    """What keeping the key ring in step needs."""

    keyring: KeyRing
    db: Database
    settings: Settings
    redis: RedisClient | None  # None: one process, nothing to hear


async def run(
    sync: KeySync, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Publish and apply key changes until cancelled."""
    client = sync.redis
    if client is None:
        task_status.started()
        return

    def install(announce: broadcast.Announce | None) -> None:
        sync.keyring.on_change = None if announce is None else _formatted(announce)

    await broadcast.relay(
        client,
        sync.settings.redis_prefix + "keys",
        what="key",
        timeout_s=sync.settings.redis_timeout_s,
        install=install,
        resync=partial(_reload_all, sync),
        apply=partial(_apply, sync),
        task_status=task_status,
    )


def _formatted(announce: broadcast.Announce) -> Callable[[str, bool], None]:
    def on_change(key_hash: str, usable: bool) -> None:
        announce(f"{key_hash} {int(usable)}")

    return on_change


async def _apply(sync: KeySync, message: str) -> None:
    key_hash, _, usable = message.partition(" ")
    if key_hash == RELOAD_ALL:
        await _reload_all(sync)
        return
    if usable != "1":
        sync.keyring.apply(key_hash, None)
        return
    record = await sync.db.run(lambda d: keys.find_by_hash(d, key_hash))
    sync.keyring.apply(
        key_hash, record if record is not None and record.status == "active" else None
    )


async def _reload_all(sync: KeySync) -> None:
    sync.keyring.load(await sync.db.run(keys.all_active))
