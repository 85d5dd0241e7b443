"""Cache counters for the analytics endpoint: hits, misses, tokens and dollars saved.

Kept per workspace (analytics never cross workspaces) and per model (the `by_model`
breakdown). Memory is bounded by workspaces x catalog models, not by traffic. The numbers
run from the process start; analytics over a date range belong in the usage log, where
each served request records whether it was a hit and what it saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class CacheTotals:
    cache_hits: int
    cache_misses: int
    hit_rate: float
    tokens_saved: int
    cost_saved_usd: float


@attrs.frozen
class ModelCacheTotals:
    hits: int
    hit_rate: float
    cost_saved_usd: float


@attrs.frozen
class CacheReport:
    """One workspace's counters, in the shape of the analytics `totals` and `by_model`."""

    totals: CacheTotals
    by_model: Mapping[str, ModelCacheTotals]

    def to_json(self) -> dict[str, Any]:
        return {
            "totals": attrs.asdict(self.totals),
            "by_model": {model: attrs.asdict(t) for model, t in self.by_model.items()},
        }


@attrs.define
class _Counter:
    hits: int = 0
    misses: int = 0
    tokens_saved: int = 0
    cost_saved_usd: float = 0.0


def hit_rate(hits: int, misses: int) -> float:
    """Hits among lookups; 0.0 before the first lookup."""
    lookups = hits + misses
    return hits / lookups if lookups else 0.0


class CacheStats:
    """Counts lookups. A request that skipped the cache is no lookup and is not counted."""

    def __init__(self) -> None:
        self._counters: dict[tuple[str, str], _Counter] = {}

    def record_hit(
        self, workspace_id: str, model_id: str, *, tokens_saved: int, cost_saved_usd: float
    ) -> None:
        """A request answered from the cache; `cost_saved_usd` is what it would have cost now."""
        counter = self._counter(workspace_id, model_id)
        counter.hits += 1
        counter.tokens_saved += tokens_saved
        counter.cost_saved_usd += cost_saved_usd

    def record_miss(self, workspace_id: str, model_id: str) -> None:
        self._counter(workspace_id, model_id).misses += 1

    def report(self, workspace_id: str) -> CacheReport:
        mine = {m: c for (w, m), c in self._counters.items() if w == workspace_id}
        hits = sum(c.hits for c in mine.values())
        misses = sum(c.misses for c in mine.values())
        totals = CacheTotals(
            cache_hits=hits,
            cache_misses=misses,
            hit_rate=hit_rate(hits, misses),
            tokens_saved=sum(c.tokens_saved for c in mine.values()),
            cost_saved_usd=sum(c.cost_saved_usd for c in mine.values()),
        )
        by_model = {
            model: ModelCacheTotals(c.hits, hit_rate(c.hits, c.misses), c.cost_saved_usd)
            for model, c in sorted(mine.items())
        }
        return CacheReport(totals, by_model)

    def _counter(self, workspace_id: str, model_id: str) -> _Counter:
        key = (workspace_id, model_id)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = _Counter()
        return counter
