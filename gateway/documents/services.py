"""What the data-documents family uses, built once by the composition root."""

from __future__ import annotations

import attrs

from gateway.documents.runtime import DocumentsRuntime
from gateway.kernels.endpoints import Endpoint
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.registry import ProviderRegistry
from providers.catalog import Catalog
from store.db import Database


@attrs.frozen
class DocumentsServices:
    db: Database
    settings: Settings
    auth: Authenticator
    catalog: Catalog
    registry: ProviderRegistry
    runtime: DocumentsRuntime  # the blob store, the processing queue, the vectors in memory
    # The retrieval family's endpoints, called in the uploader's (or searcher's) name.
    embed: Endpoint  # POST /v1/embeddings
    rerank: Endpoint  # POST /v1/rerank
