"""What the files and OCR families share across requests: the blob store, the processing
queue, a lock, and the local OCR engine's page limiter.

The queue is a bounded trio memory channel of file ids: an upload that asks for processing
sends its id and waits while the queue is full (backpressure, never a drop); the worker
`gateway.workers.file_processing` receives them. The lock makes "rename a blob into place
and insert its row" and "delete a row and remove its blob if unused" mutually exclusive, so
a delete can never remove a blob that an upload of the same bytes has just claimed.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from gateway.upstream.limits import Hold
from store.blobs import BlobStore


@attrs.define(eq=False)
class FilesRuntime:
    blobs: BlobStore
    queue_size: int
    send: trio.MemorySendChannel[str] = attrs.field(init=False)
    receive: trio.MemoryReceiveChannel[str] = attrs.field(init=False)
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)
    # Pages the local OCR engine reads at once, across every request and file.
    ocr_pages: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(2))

    # Files queued or being processed by this process: the worker's sweep skips them.
    claimed: set[str] = attrs.field(factory=set)
    # An agent's upload holds its processing's estimate until the worker starts on the
    # file (`gateway.files.agent_admission`).
    holds: dict[str, Hold] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[str](self.queue_size)

    async def enqueue(self, file_id: str) -> None:
        """Queue a file for processing, waiting while the queue is full; a file already
        claimed is not queued twice. Cancelled while waiting, the claim is dropped and the
        worker's next sweep queues the file (its row says it wants processing)."""
        if file_id in self.claimed:
            return
        self.claimed.add(file_id)
        try:
            await self.send.send(file_id)
        except BaseException:
            self.claimed.discard(file_id)
            raise

    def release(self, file_id: str) -> None:
        self.claimed.discard(file_id)
        self.started(file_id)

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
    def under(cls, data_dir: Path, *, queue_size: int, ocr_pages: int) -> FilesRuntime:
        return cls(
            BlobStore(data_dir / "blobs"), queue_size, ocr_pages=trio.CapacityLimiter(ocr_pages)
        )
