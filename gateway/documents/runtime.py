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
import sqlite_utils
import trio

from gateway.kernels.vectors.cache import VectorCache
from gateway.platform.work_queue import WorkQueue
from store import documents as document_store
from store.blobs import BlobStore
from store.erasure import Blob


@attrs.define(eq=False)
class DocumentsRuntime:
    blobs: BlobStore
    queue: WorkQueue
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)
    index: VectorCache = attrs.field(factory=VectorCache)

    def drop_pending(self, workspace_id: str) -> None:
        return None  # nothing is written behind: uploads are stored before they answer

    def remove_workspace(self, db: sqlite_utils.Database, workspace_id: str) -> list[Blob]:
        """A deleted workspace's documents (`gateway.kernels.workspace_data.WorkspaceData`)."""
        return [Blob(self.blobs, d) for d in document_store.remove_workspace(db, workspace_id)]

    def forget(self, workspace_id: str) -> None:
        self.index.forget(workspace_id)

    @classmethod
    def under(cls, root: Path, *, shared: bool = False, queue_size: int) -> DocumentsRuntime:
        return cls(BlobStore(root / "documents", shared=shared), WorkQueue(queue_size))
