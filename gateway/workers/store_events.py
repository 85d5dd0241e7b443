"""The worker that keeps each process's copies of shared configuration in step with the
store: providers, routing rules, the workspaces whose request log keeps bodies, and the
in-memory vector indexes of files and data documents.

Each process holds these in memory (read on every request, or built once per workspace)
and changes its own copy when its API changes the store. With several workers or nodes
on one store (docs/postgresql.md), the others must hear of it: every local change is
published on the Redis channel `<prefix>store` as `<kind> <workspace> <origin>`, and every
process but the origin applies it by reading that workspace's providers (or every rule)
from the store again, or by dropping its vector index of the workspace (the next search
loads it from the store: an erased document's vectors are never served by another node).

Messages are not stored by the server, so after a (re)subscription every process reloads
providers and rules and drops every vector index (`resync`). Only with `redis_url` set;
otherwise the worker starts and returns.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from functools import partial
from typing import Protocol

import attrs
import trio

from gateway.kernels.vectors.cache import VectorCache
from gateway.platform import broadcast
from gateway.platform.config import Settings
from gateway.platform.resp import RedisClient
from gateway.upstream.bodies import BodyKeepers
from gateway.upstream.registry import ProviderRegistry
from gateway.upstream.routing.book import RuleBook
from store import providers as provider_store
from store import request_log
from store import rules as rule_store
from store.db import Database


class _Announcing(Protocol):
    on_change: Callable[[str], None] | None


@attrs.frozen
class StoreSync:
    """What keeping each process's copies in step needs: the store, the server, and the
    copies (the families' vector indexes by kind, plugged in by the root)."""

    db: Database
    settings: Settings
    redis: RedisClient | None  # None: one process, nothing to hear
    registry: ProviderRegistry
    rules: RuleBook
    indexes: dict[str, VectorCache]  # "files", "documents"
    bodies: BodyKeepers = attrs.field(factory=BodyKeepers)


async def run(
    sync: StoreSync, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Publish and apply configuration changes until cancelled (with no Redis: ready,
    and nothing to do)."""
    origin = secrets.token_hex(8)  # this process, on any node

    def install(announce: broadcast.Announce | None) -> None:
        for kind, holder in _holders(sync).items():
            holder.on_change = None if announce is None else _formatted(announce, kind, origin)

    await broadcast.relay_if_shared(
        sync.redis,
        sync.settings,
        "store",
        what="configuration",
        install=install,
        resync=partial(_resync, sync),
        apply=partial(_apply, sync, origin),
        task_status=task_status,
    )


def _holders(sync: StoreSync) -> dict[str, _Announcing]:
    """What announces each kind of change (each has an `on_change`)."""
    return {"providers": sync.registry, "rules": sync.rules, "bodies": sync.bodies, **sync.indexes}


def _formatted(announce: broadcast.Announce, kind: str, origin: str) -> Callable[[str], None]:
    def on_change(workspace_id: str) -> None:
        announce(f"{kind} {workspace_id} {origin}")

    return on_change


async def _apply(sync: StoreSync, origin: str, message: str) -> None:
    kind, workspace_id, sender = [*message.split(" ", 2), "", ""][:3]
    if sender == origin or kind not in ("providers", "rules", "bodies", *sync.indexes):
        return  # our own change (already applied here), or a kind not kept here
    if kind == "providers":
        records = await sync.db.run(lambda d: provider_store.list_for_workspace(d, workspace_id))
        sync.registry.apply(workspace_id, records)
    elif kind == "rules":
        sync.rules.load(await sync.db.run(rule_store.all_enabled))
    elif kind == "bodies":
        sync.bodies.load(await sync.db.run(request_log.keeps_bodies))
    else:
        sync.indexes[kind].drop(workspace_id)


async def _resync(sync: StoreSync) -> None:
    sync.registry.load(await sync.db.run(provider_store.list_all))
    sync.rules.load(await sync.db.run(rule_store.all_enabled))
    sync.bodies.load(await sync.db.run(request_log.keeps_bodies))
    for index in sync.indexes.values():
        index.drop_all()
