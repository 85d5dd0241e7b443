"""The file-processing worker: files a stopped gateway left unfinished are processed at the
next start, and half-written uploads a crash left behind are removed."""

from __future__ import annotations

from functools import partial

import attrs
import httpx
import trio

from gateway.app.server import run_gateway
from gateway.files.input import ServiceOptions
from gateway.platform.config import Settings
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


async def test_a_blob_no_row_names_is_removed_at_the_next_start(
    nursery: trio.Nursery, settings: Settings
) -> None:
    """As a crash between a blob's rename and its row's commit (or between a delete's
    commit and the unlink) leaves it: whole bytes that no file names."""
    ids, blobs = leave_unfinished(settings)
    writer = blobs.open_writer()
    writer.write(b"never acknowledged")
    orphan = blobs.commit(writer)
    running = await nursery.start(partial(run_gateway, settings, env={}))
    assert not blobs.exists(orphan)
    named = await running.state.db.run(file_store.blob_digests)
    assert blobs.blobs() == sorted(named) and len(named) == 1
    async with httpx.AsyncClient(
        base_url=running.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}
    ) as http:
        for file_id in ids:
            assert (await http.get(f"/v1/files/{file_id}/content")).status_code == 200


async def test_a_file_in_no_queue_is_found_by_the_sweep(
    nursery: trio.Nursery, settings: Settings
) -> None:
    """As an upload cancelled while the queue was full leaves it: a row that wants
    processing, in no queue."""
    running = await nursery.start(
        partial(run_gateway, attrs.evolve(settings, file_sweep_interval_s=0.05), env={})
    )
    blobs = running.state.files.blobs
    writer = blobs.open_writer()
    writer.write(b"Found by the sweep.")
    record = FileRecord(
        workspace_id="default", key_id="key_x", filename="s.txt", purpose="document",
        kind="txt", content_type="text/plain", bytes=19, sha256=blobs.commit(writer),
        created_at=1_700_000_000, options=attrs.asdict(ServiceOptions(process=True)),
        process_id="proc_sweep",
    )  # fmt: skip
    await running.state.db.run(lambda d: file_store.insert(d, record, quota_bytes=10**9))
    async with httpx.AsyncClient(
        base_url=running.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}
    ) as http:
        status = await processed(http, record.id)
    assert status["status"] == "processed"
    assert running.state.files.queue.claimed == set()
