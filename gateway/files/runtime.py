"""What the files and OCR families share across requests: the blob store, the processing
queue, a lock, the local OCR engine's page limiter, the PII scans' limiter and the vector
index.

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
from gateway.upstream.limits import Hold
from store.blobs import BlobStore


@attrs.define(eq=False)
class FilesRuntime:
    blobs: BlobStore
    queue: WorkQueue
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)
    # Pages the local OCR engine reads at once, across every request and file.
    ocr_pages: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(2))
    # PII scans at once, each in a worker process with its own copy of the name model
    # (`gateway.files.pii_worker`): files' processing and the scribe pipeline's notes.
    pii_scans: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))
    # The workspaces' file vectors in memory, for POST /v1/files/search.
    index: VectorCache = attrs.field(factory=VectorCache)
    # An agent's upload holds its processing's estimate until the worker starts on the
    # file (`gateway.files.agent_admission`).
    holds: dict[str, Hold] = attrs.field(factory=dict)

    def hold_until_started(self, file_id: str, hold: Hold) -> None:
        """Keep an agent upload's reservation while its file waits for the worker."""
        self.holds[file_id] = hold

    def started(self, file_id: str) -> None:
        """The worker starts on the file: the stages reserve for themselves now, so the
        upload's reservation is given back (charged nothing)."""
        hold = self.holds.pop(file_id, None)
        if hold is not None:
            hold.release()

    @classmethod
    def under(
        cls, root: Path, *, shared: bool = False, queue_size: int, ocr_pages: int
    ) -> FilesRuntime:
        return cls(
            BlobStore(root / "blobs", shared=shared),
            WorkQueue(queue_size),
            ocr_pages=trio.CapacityLimiter(ocr_pages),
        )
