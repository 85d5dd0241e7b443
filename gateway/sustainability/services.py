"""What the sustainability family uses, built once by the composition root."""

from __future__ import annotations

import attrs

from gateway.platform.callers import Authenticator
from gateway.upstream.registry import ProviderRegistry
from providers.catalog import Catalog
from store.db import Database


@attrs.frozen
class SustainabilityServices:
    db: Database
    catalog: Catalog
    registry: ProviderRegistry
    auth: Authenticator
