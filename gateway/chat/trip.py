"""The facts of one chat request that every part of its answer reports.

Built once when the request has been authenticated, validated and routed; the renderer
and the usage log read it. It changes only by `attrs.evolve` once the race is decided
(or the cache answered).
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
    task_type: str
    rule: Rule | None = None  # the routing rule that matched, if any
    # Filled in once the upstream race is decided (or the cache answered).
    served: Target | None = None
    attempts: tuple[Mapping[str, object], ...] = ()
    retries: int = 0
    cache_hit: bool = False
    # The request's cache key, computed even with the cache off: the usage record keeps it
    # so that the sustainability reports can find repeated identical questions.
    prompt_hash: str | None = None

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
    def labels(self) -> RequestLabels:
        return self.facts.labels

    @property
    def target(self) -> Target:
        """The target that served (or will serve) the request."""
        return self.served or self.resolution.target

    @property
    def fell_back(self) -> bool:
        return self.served is not None and self.served != self.resolution.target

    @property
    def model_used(self) -> str:
        return f"{self.target.provider_id}/{self.target.model_id}"
