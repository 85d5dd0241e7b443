"""What the analytics family uses, built once by the composition root."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from gateway.analytics.live import Gauges, SharedRealtime
from gateway.analytics.runtime import ExportRuntime
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.platform.drain import Drain
from gateway.upstream.health import HealthBook
from gateway.upstream.registry import ProviderRegistry
from store.db import Database


@attrs.frozen
class AnalyticsServices:
    db: Database
    settings: Settings
    auth: Authenticator
    exports: ExportRuntime
    registry: ProviderRegistry
    health: HealthBook
    drain: Drain  # the requests in flight, for the realtime page
    # Writes the usage log's pending records, before reports read it.
    flush_usage: Callable[[], Awaitable[None]]
    # Requests of this process waiting for rate-limit capacity (strategy `queue`).
    queue_depth: Callable[[], int]
    # Several workers: the realtime counters every worker feeds (None: this process's).
    live: SharedRealtime | None = None

    def gauges(self) -> Gauges:
        """This process's requests in flight and requests queued for capacity."""
        return self.drain.in_flight, self.queue_depth()
