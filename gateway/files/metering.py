"""The usage record of a stored upload: its bytes, so that storage shows in the key's usage.

One record per upload kept (a refused or abandoned upload stores nothing and records
nothing), accounted by the engine like any served answer (`Engine.served`: no race served
it) with `bytes_stored` set. Its cost goes through the catalog's one pricing rule; the catalog
prices no storage today (no vendor it lists sells it per byte), so the cost is 0 and the
bytes are recorded for reports, quotas and a price added later. `endpoint` is `files`,
which the request limits do not count (`LIMITED_ENDPOINTS`).
"""

from __future__ import annotations

from gateway.files.services import FilesServices
from gateway.upstream.facts import RequestFacts
from gateway.upstream.resolve import Target
from providers.types import Usage
from store.files import FileRecord

# What served the request: the gateway's own blob store, which is no catalog model.
STORAGE_TARGET = Target("gateway", "file-storage", "blob-store", None)


def record_stored(services: FilesServices, facts: RequestFacts, record: FileRecord) -> None:
    """Queue the usage record of `record`'s stored bytes (never blocks)."""
    services.engine.served(facts, STORAGE_TARGET, None, Usage(bytes_stored=record.bytes))
