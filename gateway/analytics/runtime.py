"""What the export endpoints share with the export worker: the folder of export files and
the bounded queue of export ids to build.

A POST sends the new export's id and waits while the queue is full (backpressure, never a
drop); `gateway.analytics.export_worker` receives them. Exports left `processing` by a
stop are queued again by the worker when it starts.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

QUEUE_SIZE = 16


@attrs.define(eq=False)
class ExportRuntime:
    folder: Path
    send: trio.MemorySendChannel[str] = attrs.field(init=False)
    receive: trio.MemoryReceiveChannel[str] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[str](QUEUE_SIZE)

    def path_of(self, file_name: str) -> Path:
        return self.folder / file_name

    @classmethod
    def under(cls, data_dir: Path) -> ExportRuntime:
        return cls(data_dir / "exports")
