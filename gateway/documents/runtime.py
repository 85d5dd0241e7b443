"""What the data-document family shares across requests: its own blob store, the bounded
processing queue, the lock between blob writes and erasures, and the vector index cache.

The blob store is separate from the files family's, so erasing a document never has to ask
whether a File of the same bytes still needs them. The queue is the files' kind
(`gateway.platform.work_queue`): a full queue makes the upload wait (backpressure, never a
drop), and the worker's sweep picks up what a stop or a cancelled upload left behind.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from gateway.platform.work_queue import WorkQueue
from gateway.retrieval.vector_cache import VectorCache
from store.blobs import BlobStore


@attrs.define(eq=False)
class DocumentsRuntime:
    blobs: BlobStore
    queue: WorkQueue
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)
    index: VectorCache = attrs.field(factory=VectorCache)

    @classmethod
    def under(cls, root: Path, *, shared: bool = False, queue_size: int) -> DocumentsRuntime:
        return cls(BlobStore(root / "documents", shared=shared), WorkQueue(queue_size))
