"""What the data-document family shares across requests: its own blob store, the bounded
processing queue, the lock between blob writes and erasures, and the vector index cache.

The blob store is separate from the files family's, so erasing a document never has to ask
whether a File of the same bytes still needs them. The queue works like the files queue: a
full queue makes the upload wait (backpressure, never a drop), and the worker's sweep picks
up what a stop or a cancelled upload left behind.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from gateway.retrieval.vector_cache import VectorCache
from store.blobs import BlobStore


@attrs.define(eq=False)
class DocumentsRuntime:
    blobs: BlobStore
    queue_size: int
    send: trio.MemorySendChannel[str] = attrs.field(init=False)
    receive: trio.MemoryReceiveChannel[str] = attrs.field(init=False)
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)
    index: VectorCache = attrs.field(factory=VectorCache)
    claimed: set[str] = attrs.field(factory=set)

    def __attrs_post_init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[str](self.queue_size)

    async def enqueue(self, document_id: str) -> None:
        """Queue a document, waiting while the queue is full; one already claimed is not
        queued twice. Cancelled while waiting, the claim is dropped (the sweep requeues)."""
        if document_id in self.claimed:
            return
        self.claimed.add(document_id)
        try:
            await self.send.send(document_id)
        except BaseException:
            self.claimed.discard(document_id)
            raise

    def release(self, document_id: str) -> None:
        self.claimed.discard(document_id)

    @classmethod
    def under(cls, data_dir: Path, *, queue_size: int) -> DocumentsRuntime:
        return cls(BlobStore(data_dir / "documents"), queue_size)
