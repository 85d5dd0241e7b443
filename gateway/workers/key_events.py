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
from typing import TYPE_CHECKING

import trio

from gateway.platform import broadcast
from store import keys

if TYPE_CHECKING:
    from gateway.app.state import AppState


RELOAD_ALL = "*"


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Publish and apply key changes until cancelled."""
    client = state.redis
    if client is None:
        task_status.started()
        return

    def install(announce: broadcast.Announce | None) -> None:
        state.keyring.on_change = None if announce is None else _formatted(announce)

    await broadcast.relay(
        client,
        state.settings.redis_prefix + "keys",
        what="key",
        timeout_s=state.settings.redis_timeout_s,
        install=install,
        resync=partial(_reload_all, state),
        apply=partial(_apply, state),
        task_status=task_status,
    )


def _formatted(announce: broadcast.Announce) -> Callable[[str, bool], None]:
    def on_change(key_hash: str, usable: bool) -> None:
        announce(f"{key_hash} {int(usable)}")

    return on_change


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
