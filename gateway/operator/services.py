"""What the operator family (metrics, the console, the OpenAPI document) uses, built once
by the composition root. Its request observers (the access log, the request counters)
wrap the HTTP app in the root (`gateway.operator.middleware.ObservedApp`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from gateway.operator.live import LiveSources
from gateway.operator.metrics import GatewayMetrics
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from store.db import Database


@attrs.frozen
class OperatorServices:
    db: Database
    settings: Settings
    auth: Authenticator
    metrics: GatewayMetrics
    live: LiveSources  # what a scrape reads beside the counters
    # Writes the usage log's pending records, before the console's charts read it.
    flush_usage: Callable[[], Awaitable[None]]
