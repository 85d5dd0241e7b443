"""The file-processing worker: files a stopped gateway left unfinished are processed at the
next start, and half-written uploads a crash left behind are removed."""

from __future__ import annotations

from functools import partial

import attrs
import httpx
import trio

from gateway.files.input import ServiceOptions
from gateway.platform.config import Settings
from gateway.platform.server import run_gateway
from store import files as file_store
from store.blobs import BlobStore
from store.db import open_database
from store.files import FileRecord
from tests.gateway.conftest import ADMIN_KEY

from .test_files_api import processed


def leave_unfinished(settings: Settings) -> tuple[list[str], BlobStore]:
    """A data dir as a crash leaves it: one file mid-processing, one queued, one partial
    upload in the blob store's temporary folder."""
    blobs = BlobStore(settings.data_dir / "blobs")
    writer = blobs.open_writer()
    writer.write(b"Text that was being processed.")
    digest = blobs.commit(writer)
    crashed = blobs.open_writer()
    crashed.write(b"half an upload")
    crashed.handle.close()
    options = attrs.asdict(ServiceOptions(process=True))
    records = [
        FileRecord(
            workspace_id="default",
            key_id="key_gone",
            filename=f"{status}.txt",
            purpose="document",
            kind="txt",
            content_type="text/plain",
            bytes=30,
            sha256=digest,
            created_at=1_700_000_000 + index,
            status=status,
            options=options,
            process_id=f"proc_{index}",
        )
        for index, status in enumerate(("processing", "uploaded"))
    ]
    db = open_database(settings.data_dir)
    try:
        for record in records:
            db.run_sync(lambda d, r=record: file_store.insert(d, r, quota_bytes=10**9))
    finally:
        db.close()
    return [r.id for r in records], blobs


async def test_unfinished_files_are_processed_at_the_next_start(
    nursery: trio.Nursery, settings: Settings
) -> None:
    ids, blobs = leave_unfinished(settings)
    running = await nursery.start(partial(run_gateway, settings, env={}))
    async with httpx.AsyncClient(
        base_url=running.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}
    ) as http:
        for file_id in ids:
            status = await processed(http, file_id)
            assert status["status"] == "processed", status
            text = (await http.get(f"/v1/files/{file_id}/text")).json()
            assert text["text"] == "Text that was being processed."
    assert not any(p.parent.name == "tmp" for p in blobs.stored())
