"""What the files and OCR families share across requests: the blob store, the processing
queue, a lock, the local OCR engine's page limiter and the vector index.

The queue (`gateway.platform.work_queue`, shared with data documents) is bounded: an upload
that asks for processing waits while it is full (backpressure, never a drop); the worker
`gateway.workers.file_processing` serves it. The lock makes "rename a blob into place
and insert its row" and "delete a row and remove its blob if unused" mutually exclusive, so
a delete can never remove a blob that an upload of the same bytes has just claimed.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from gateway.platform.work_queue import WorkQueue
from gateway.retrieval.vector_cache import VectorCache
from store.blobs import BlobStore


@attrs.define(eq=False)
class FilesRuntime:
    blobs: BlobStore
    queue: WorkQueue
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)
    # Pages the local OCR engine reads at once, across every request and file.
    ocr_pages: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(2))
    # The workspaces' file vectors in memory, for POST /v1/files/search.
    index: VectorCache = attrs.field(factory=VectorCache)

    @classmethod
    def under(cls, data_dir: Path, *, queue_size: int, ocr_pages: int) -> FilesRuntime:
        return cls(
            BlobStore(data_dir / "blobs"),
            WorkQueue(queue_size),
            ocr_pages=trio.CapacityLimiter(ocr_pages),
        )
