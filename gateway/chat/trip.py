"""The facts of one chat request that every part of its answer reports.

Built once when the request has been authenticated, validated and routed; the renderer
and the usage log read it. It changes only once the race is decided (`decided`) or the cache
answered. Its facts carry the task type and the cache key
(`RequestFacts.task_type`, `prompt_hash`), which the usage record keeps.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from gateway.chat.input import ChatParams
from gateway.platform.auth import Principal
from gateway.upstream.facts import RequestFacts
from gateway.upstream.labels import RequestLabels
from gateway.upstream.resolve import Resolution, Target
from gateway.upstream.routing.rules import Rule


@attrs.frozen
class Trip:
    facts: RequestFacts
    params: ChatParams
    resolution: Resolution
    rule: Rule | None = None  # the routing rule that matched, if any
    # Filled in once the upstream race is decided (or the cache answered).
    served: Target | None = None
    attempts: tuple[Mapping[str, object], ...] = ()
    retries: int = 0
    cache_hit: bool = False

    def decided(
        self, served: Target, attempts: tuple[Mapping[str, object], ...], retries: int
    ) -> Trip:
        """This trip with the race's outcome, in one construction (`attrs.evolve` walks
        every field by introspection, ~4 us a request)."""
        return Trip(
            facts=self.facts,
            params=self.params,
            resolution=self.resolution,
            rule=self.rule,
            served=served,
            attempts=attempts,
            retries=retries,
            cache_hit=self.cache_hit,
        )

    @property
    def request_id(self) -> str:
        return self.facts.request_id

    @property
    def created(self) -> int:
        return self.facts.created

    @property
    def principal(self) -> Principal:
        return self.facts.principal

    @property
    def task_type(self) -> str:
        return self.facts.task_type or "chat"

    @property
    def labels(self) -> RequestLabels:
        return self.facts.labels

    @property
    def target(self) -> Target:
        """The target that served (or will serve) the request."""
        return self.served or self.resolution.target

    @property
    def fell_back(self) -> bool:
        # Identity first: `!=` on attrs classes compares every field (the catalog entry's
        # too), three times per answer, where the served target is the routed one.
        served, routed = self.served, self.resolution.target
        return served is not None and served is not routed and served != routed

    @property
    def model_used(self) -> str:
        return f"{self.target.provider_id}/{self.target.model_id}"
