"""What the pipelines family (voice pipelines, their templates, and the session planner
the realtime family runs on) uses, built once by the composition root."""

from __future__ import annotations

import attrs
import trio

from gateway.pipelines.capabilities import VoiceParts
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine
from providers.catalog import Catalog
from store.db import Database


@attrs.frozen
class PipelinesServices:
    db: Database
    settings: Settings
    auth: Authenticator
    engine: Engine  # a pipeline's limits are settled here on the model's tokens
    admission: Admission
    # PII scans at once (the scribe's notes share the files' worker process limit).
    pii_scans: trio.CapacityLimiter
    voice: VoiceParts  # the stages, through the audio and chat families

    @property
    def catalog(self) -> Catalog:
        return self.engine.catalog
