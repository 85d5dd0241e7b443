"""What the files family uses, built once by the composition root."""

from __future__ import annotations

import attrs

from gateway.files.capabilities import Capabilities
from gateway.files.runtime import FilesRuntime
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine
from providers.catalog import Catalog
from store.db import Database


@attrs.frozen
class FilesServices:
    db: Database
    settings: Settings
    auth: Authenticator
    engine: Engine  # a stored upload's usage record (no race serves it)
    admission: Admission  # an agent's upload passes its policy
    runtime: FilesRuntime  # the blob store, the processing queue, the vectors in memory
    capabilities: Capabilities  # transcription, OCR and embeddings, from their families

    @property
    def catalog(self) -> Catalog:
        return self.engine.catalog
