"""What the core's management API uses, built once by the composition root."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from gateway.platform.auth import KeyRing
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.health import HealthBook
from gateway.upstream.limits import LimitBackend, UpstreamMeter
from gateway.upstream.registry import ProviderRegistry
from providers.catalog import Catalog
from store.db import Database
from store.secrets import CredentialCipher


@attrs.frozen
class AdminServices:
    db: Database
    settings: Settings
    auth: Authenticator
    keyring: KeyRing
    catalog: Catalog
    registry: ProviderRegistry
    health: HealthBook
    cipher: CredentialCipher  # provider credentials are stored encrypted
    limits: LimitBackend  # the keys' figures (in memory, or on the shared server)
    upstream: UpstreamMeter  # what the gateway sends each provider
    # Writes the usage log's pending records, before figures are read from it.
    flush_usage: Callable[[], Awaitable[None]]
