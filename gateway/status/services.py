"""What the status family (status page, incidents, SLA and its credits, alerts) uses,
built once by the composition root."""

from __future__ import annotations

import attrs

from gateway.kernels.webhooks.services import Webhooks
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.health import HealthBook
from gateway.upstream.registry import ProviderRegistry
from providers.catalog import Catalog
from store.db import Database


@attrs.frozen
class StatusServices:
    db: Database
    settings: Settings
    catalog: Catalog
    registry: ProviderRegistry
    health: HealthBook
    auth: Authenticator
    webhooks: Webhooks  # status events and alert notifications go out through it
