"""What admission needs from a limits backend: in memory (one process) or shared (Redis).

`gateway.upstream.limits.limiter.RateLimiter` keeps the counters in the process and is
exact for one worker; `gateway.upstream.limits.shared.SharedLimiter` keeps them on a
Redis-protocol server and is exact for any number of workers and nodes. Both reserve on
admission and settle when the request ends, through the hold they return.
"""

from __future__ import annotations

from typing import Protocol

from gateway.upstream.limits.headers import Snapshot
from gateway.upstream.limits.limiter import Hold
from store.keys import ApiKeyRecord


class LimitBackend(Protocol):
    def estimate(self, key: ApiKeyRecord, prompt_tokens: int, max_tokens: int | None) -> int:
        """The tokens to reserve for a request."""
        ...

    async def acquire(self, key: ApiKeyRecord, estimated_tokens: int) -> Hold:
        """Admit now or raise the 429 of the spent limit."""
        ...

    async def wait_for_capacity(
        self, key: ApiKeyRecord, estimated_tokens: int, max_wait_s: float
    ) -> Hold:
        """Admit within `max_wait_s` or raise the 429."""
        ...

    async def current(self, key: ApiKeyRecord) -> Snapshot:
        """The key's figures now; nothing is taken."""
        ...
