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
import sqlite_utils
import trio

from gateway.kernels.vectors.cache import VectorCache
from gateway.platform.work_queue import WorkQueue
from gateway.upstream.limits import Hold
from store import files as file_store
from store.blobs import BlobStore
from store.erasure import Blob


@attrs.define(eq=False)
class FilesRuntime:
    blobs: BlobStore
    queue: WorkQueue
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)
    # PII scans at once, each in a worker process with its own copy of the name model
    # (`gateway.kernels.pii.worker`): files' processing and the scribe pipeline's notes.
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

    def drop_pending(self, workspace_id: str) -> None:
        return None  # nothing is written behind: uploads are stored before they answer

    def remove_workspace(self, db: sqlite_utils.Database, workspace_id: str) -> list[Blob]:
        """A deleted workspace's files (`gateway.kernels.workspace_data.WorkspaceData`)."""
        return [Blob(self.blobs, d) for d in file_store.remove_workspace(db, workspace_id)]

    def forget(self, workspace_id: str) -> None:
        self.index.forget(workspace_id)

    @classmethod
    def under(cls, root: Path, *, shared: bool = False, queue_size: int) -> FilesRuntime:
        return cls(BlobStore(root / "blobs", shared=shared), WorkQueue(queue_size))
