"""The configuration channel's two halves without a server: what each in-memory copy
announces when the API changes it here, and how a copy takes another process's change
(re-read, or dropped) without announcing it again (no echo between processes)."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import numpy as np

from gateway.kernels.vectors.cache import VectorCache
from gateway.upstream.routing.book import RuleBook
from store.rules import RoutingRuleRecord
from store.vector_rows import VectorRows


def _rows(owner: str) -> VectorRows:
    vector = np.array([1.0, 0.0], dtype="<f4").tobytes()
    return VectorRows(rowids=[1], owners=[owner], vectors=[vector], spaces=["m@p"])


async def test_a_vector_index_announces_its_changes_and_drops_anothers_silently() -> None:
    cache, heard = VectorCache(), []
    cache.on_change = heard.append

    async def load() -> VectorRows:
        return _rows("doc_a")

    await cache.snapshot("ws", load)
    assert heard == []  # a load from the store is no change
    await cache.add("ws", "doc_b", load)
    await cache.remove("ws", "doc_a")
    cache.forget("ws2")
    assert heard == ["ws", "ws", "ws2"]
    cache.drop("ws")  # another process changed the workspace
    assert cache.cached("ws") is None and heard == ["ws", "ws", "ws2"]
    await cache.snapshot("ws", load)
    cache.drop_all()
    assert cache.cached("ws") is None and len(heard) == 3


def test_the_rule_book_announces_api_changes_and_loads_silently() -> None:
    book, heard = RuleBook(), []
    book.on_change = heard.append
    now = datetime(2025, 3, 1, tzinfo=UTC)
    rule = RoutingRuleRecord(
        workspace_id="ws",
        name="cheap",
        priority=1,
        conditions={"models": ["gpt-4o"]},
        actions={"route_to": "gpt-4o-mini"},
        created_at=now,
        updated_at=now,
    )
    book.load([rule])  # start-up, or another process's change read from the store
    assert heard == [] and [r.id for r in book.enabled("ws")] == [rule.id]
    book.put(attrs.evolve(rule, enabled=False))
    book.remove("ws", rule.id)
    assert heard == ["ws", "ws"] and book.enabled("ws") == ()


def test_the_body_keepers_announce_api_changes_and_load_silently() -> None:
    from gateway.upstream.bodies import BodyKeepers

    keepers, heard = BodyKeepers(), []
    keepers.on_change = heard.append
    keepers.load({"ws_a"})  # start-up, or another process's change read from the store
    assert heard == [] and keepers.keeps("ws_a")
    keepers.set("ws_b", True)
    keepers.set("ws_a", False)
    assert heard == ["ws_b", "ws_a"]
    assert keepers.keeps("ws_b") and not keepers.keeps("ws_a")
