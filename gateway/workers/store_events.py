"""The worker that keeps each process's copies of shared configuration in step with the
store: providers, routing rules, and the in-memory vector indexes of files and data
documents.

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
from typing import TYPE_CHECKING, Protocol

import trio

from gateway.platform import broadcast
from store import providers as provider_store
from store import rules as rule_store

if TYPE_CHECKING:
    from gateway.platform.state import AppState

KINDS = ("providers", "rules", "files", "documents")


class _Announcing(Protocol):
    on_change: Callable[[str], None] | None


async def run(
    state: AppState, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Publish and apply configuration changes until cancelled (with no Redis: ready,
    and nothing to do)."""
    origin = secrets.token_hex(8)  # this process, on any node

    def install(announce: broadcast.Announce | None) -> None:
        for kind, holder in _holders(state).items():
            holder.on_change = None if announce is None else _formatted(announce, kind, origin)

    await broadcast.relay_if_shared(
        state.redis,
        state.settings,
        "store",
        what="configuration",
        install=install,
        resync=partial(_resync, state),
        apply=partial(_apply, state, origin),
        task_status=task_status,
    )


def _holders(state: AppState) -> dict[str, _Announcing]:
    """What announces each kind of change (each has an `on_change`)."""
    return {
        "providers": state.registry,
        "rules": state.rules,
        "files": state.files.index,
        "documents": state.documents.index,
    }


def _formatted(announce: broadcast.Announce, kind: str, origin: str) -> Callable[[str], None]:
    def on_change(workspace_id: str) -> None:
        announce(f"{kind} {workspace_id} {origin}")

    return on_change


async def _apply(state: AppState, origin: str, message: str) -> None:
    kind, workspace_id, sender = [*message.split(" ", 2), "", ""][:3]
    if sender == origin or kind not in KINDS:
        return  # our own change (already applied here), or a kind this version lacks
    if kind == "providers":
        records = await state.db.run(lambda d: provider_store.list_for_workspace(d, workspace_id))
        state.registry.apply(workspace_id, records)
    elif kind == "rules":
        state.rules.load(await state.db.run(rule_store.all_enabled))
    elif kind == "files":
        state.files.index.drop(workspace_id)
    else:
        state.documents.index.drop(workspace_id)


async def _resync(state: AppState) -> None:
    state.registry.load(await state.db.run(provider_store.list_all))
    state.rules.load(await state.db.run(rule_store.all_enabled))
    state.files.index.drop_all()
    state.documents.index.drop_all()
