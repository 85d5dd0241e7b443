"""The files endpoints: upload, list, read, change, delete, and the derived records.

Orchestration only: validation is in `input`, the streamed body in `upload`, the answers in
`render`, SQL in `store.files`. Every read is scoped to the caller's workspace, so another
workspace's file answers 404 exactly like an unknown id.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import sqlite_utils
import trio

from gateway.files import agent_admission, render
from gateway.files import input as file_input
from gateway.files.metering import record_stored
from gateway.files.services import FilesServices
from gateway.kernels.uploads import integrity
from gateway.kernels.uploads.receive import Received, quota_exceeded, receive, upload_deadline
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, not_found
from gateway.platform.extras import AUDIO, not_installed
from gateway.upstream.facts import new_facts
from gateway.upstream.limits import Hold
from store import erasure
from store import files as file_store
from store.columns import new_id
from store.erasure import Blob, Removal
from store.files import FileRecord


def file_not_found(file_id: str) -> ApiError:
    return not_found("file_not_found", f"No file '{file_id}'.", param="file_id")


async def upload(
    services: FilesServices,
    principal: Principal,
    chunks: AsyncIterator[bytes],
    boundary: bytes,
    headers: Mapping[str, str],
) -> render.File:
    """Store one upload, record its stored bytes as usage and queue its processing when
    asked; the File.

    Cancellation (a client gone mid-upload) removes the partial blob and propagates.
    """
    principal.require("files")
    facts = new_facts("files", principal, headers)
    runtime = services.runtime
    with services.engine.usage.rejecting(facts):
        received, form, hold = await _checked(services, principal, chunks, boundary)
    handed_over = False
    try:
        record = await _store(services, principal, received, form)
        record_stored(services, facts, record)
        if record.process_id is not None:
            if hold is not None:  # given back when the worker starts on the file
                runtime.hold_until_started(record.id, hold)
                handed_over = True
            await runtime.queue.enqueue(record.id)
    finally:
        if hold is not None and not handed_over:
            hold.release()
    return render.file_object(record)


async def _checked(
    services: FilesServices, principal: Principal, chunks: AsyncIterator[bytes], boundary: bytes
) -> tuple[Received, file_input.UploadForm, Hold | None]:
    """The upload received, checked (its form, its bytes) and admitted for an agent; a
    refused one leaves nothing in the blob store."""
    quota = services.settings.files_quota_bytes
    await services.admission.precheck(principal)
    used = await services.db.run(lambda d: file_store.workspace_bytes(d, principal.workspace_id))
    with upload_deadline(services.settings.upload_timeout_s):
        received = await _receive(services, chunks, boundary, quota_left=quota - used)
    try:
        form = file_input.upload_form(received.fields)
        file_input.check_kind(form.purpose, received.kind)
        file_input.check_models(services.catalog, form.service)
        _check_installed(form, received)
        await _check_integrity(received)
        hold = await _admit(services, principal, received, form)
    except BaseException:
        services.runtime.blobs.discard(received.writer)
        raise
    return received, form, hold


def _check_installed(form: file_input.UploadForm, received: Received) -> None:
    """An audio file's transcription runs on the audio family's engines: 501 naming the
    `[audio]` extra at upload when it is missing, not a failed file later."""
    if form.service.auto_transcribe and received.kind.family == "audio" and not AUDIO.installed():
        raise not_installed("Transcribing an audio file", (AUDIO,))


async def _admit(
    services: FilesServices, principal: Principal, received: Received, form: file_input.UploadForm
) -> Hold | None:
    """An agent's upload passes its agent's limits (`gateway.files.agent_admission`)."""
    return await agent_admission.admit_upload(
        services,
        principal,
        received.writer.path,
        received.writer.size,
        received.kind.name,
        received.filename,
        form.service,
    )


async def _store(
    services: FilesServices, principal: Principal, received: Received, form: file_input.UploadForm
) -> FileRecord:
    """Move the blob into place and insert its row (under the workspace's quota)."""
    runtime, quota = services.runtime, services.settings.files_quota_bytes
    record = _new_record(principal, received, form)
    async with runtime.blob_lock:
        digest = await trio.to_thread.run_sync(runtime.blobs.commit, received.writer)
        record = attrs.evolve(record, sha256=digest)
        try:
            await services.db.run(lambda d: file_store.insert(d, record, quota_bytes=quota))
        except file_store.QuotaExceededError:
            await _remove_unused_blob(services, digest)
            raise quota_exceeded(quota) from None
    return record


async def _receive(
    services: FilesServices, chunks: AsyncIterator[bytes], boundary: bytes, *, quota_left: int
) -> Received:
    quota = services.settings.files_quota_bytes
    return await receive(
        chunks, boundary, services.runtime.blobs, quota_left=max(quota_left, 0), quota=quota
    )


async def _check_integrity(received: Received) -> None:
    problem = await trio.to_thread.run_sync(integrity.problem, received.writer.path, received.kind)
    if problem is not None:
        raise ApiError(400, "invalid_file", problem, param="file")


def _new_record(
    principal: Principal, received: Received, form: file_input.UploadForm
) -> FileRecord:
    options = form.service
    return FileRecord(
        workspace_id=principal.workspace_id,
        key_id=principal.key_id,
        filename=received.filename,
        purpose=form.purpose,
        kind=received.kind.name,
        content_type=received.kind.content_type,
        bytes=received.writer.size,
        sha256="0" * 64,
        created_at=int(time.time()),
        metadata=form.metadata,
        options=attrs.asdict(options),
        collection=options.collection,
        process_id=new_id("proc_") if options.wants_processing else None,
        language=options.language,
        agent_id=agent_admission.agent_of(principal),
        agent_session=principal.agent_session if agent_admission.agent_of(principal) else None,
    )


async def _remove_unused_blob(services: FilesServices, digest: str) -> None:
    """Remove a blob no row names; call with `blob_lock` held."""
    if not await services.db.run(lambda d: file_store.blob_in_use(d, digest)):
        await trio.to_thread.run_sync(services.runtime.blobs.remove, digest)


async def get_file(services: FilesServices, principal: Principal, file_id: str) -> FileRecord:
    principal.require("files")
    record = await services.db.run(lambda d: file_store.get(d, principal.workspace_id, file_id))
    if record is None:
        raise file_not_found(file_id)
    return record


async def list_files(
    services: FilesServices, principal: Principal, args: Mapping[str, str]
) -> render.FileList:
    principal.require("files")
    query = file_input.list_query(principal.workspace_id, args)
    try:
        records, more = await services.db.run(lambda d: file_store.list_files(d, query))
    except LookupError:
        raise not_found(
            "file_not_found", f"'after' names no file: {query.after}.", param="after"
        ) from None
    return render.file_list(records, has_more=more, processing=args.get("include") == "processing")


async def patch_metadata(
    services: FilesServices, principal: Principal, file_id: str, body: Mapping[str, Any]
) -> render.PatchedFile:
    record = await get_file(services, principal, file_id)
    metadata = file_input.patch_body(body)
    await services.db.run(lambda d: file_store.update(d, record.id, metadata=metadata))
    return render.patched(attrs.evolve(record, metadata=metadata))


async def delete_file(
    services: FilesServices, principal: Principal, file_id: str
) -> render.DeletedFile:
    """Erase the file, everything derived from it, and its blob unless another file shares
    the same bytes (`store.erasure`: nothing of it stays on disk)."""
    principal.require("files")
    runtime, workspace_id = services.runtime, principal.workspace_id

    def remove(db: sqlite_utils.Database) -> Removal[str]:
        unused = file_store.delete(db, workspace_id, file_id)
        return Removal(file_id, () if unused is None else (Blob(runtime.blobs, unused),))

    async def forget(_: str) -> None:
        await runtime.index.remove(workspace_id, file_id)

    async with runtime.blob_lock:
        try:
            await erasure.erase(services.db, remove, forget=forget)
        except LookupError:
            raise file_not_found(file_id) from None
    return render.deleted(file_id)


async def content(
    services: FilesServices, principal: Principal, file_id: str
) -> tuple[Path, str, str]:
    """Where the file's bytes are, their Content-Type, and the name they were uploaded as
    (the download's Content-Disposition filename)."""
    record = await get_file(services, principal, file_id)
    return services.runtime.blobs.path_of(record.sha256), record.content_type, record.filename


ATTACHED_LIMIT = 32 * 1024 * 1024
"""The largest file a chat message may name by id: the vendors' own bound on a document
in one request (OpenAI's and Anthropic's 32 MB; Gemini's inline data is 20 MB)."""


async def attached(
    services: FilesServices, principal: Principal, file_id: str
) -> tuple[bytes, str, str]:
    """(bytes, content type, filename) of a file a chat message names by id (its
    `file_id` part), from the caller's workspace (another's is a 404)."""
    record = await get_file(services, principal, file_id)
    if record.bytes > ATTACHED_LIMIT:
        raise ApiError(
            413,
            "file_too_large",
            f"The file '{file_id}' is {record.bytes} bytes; a message may carry at most "
            f"{ATTACHED_LIMIT} bytes of a file.",
            param="file_id",
            value=file_id,
        )
    path = services.runtime.blobs.path_of(record.sha256)
    data = await trio.to_thread.run_sync(path.read_bytes)
    return data, record.content_type, record.filename


async def status(
    services: FilesServices, principal: Principal, file_id: str
) -> render.FileStatusRecord:
    return render.status_record(await get_file(services, principal, file_id))


async def text(services: FilesServices, principal: Principal, file_id: str) -> render.FileText:
    record = await get_file(services, principal, file_id)
    pages = await services.db.run(lambda d: file_store.pages(d, record.id))
    return render.text_record(record, pages)


async def chunks(
    services: FilesServices, principal: Principal, file_id: str, args: Mapping[str, str]
) -> render.FileChunks:
    limit, offset = file_input.page_window(args)
    record = await get_file(services, principal, file_id)
    found, total = await services.db.run(
        lambda d: file_store.chunks(d, record.id, limit=limit, offset=offset)
    )
    return render.chunks_record(record, found, total)


async def pii(services: FilesServices, principal: Principal, file_id: str) -> render.PiiReport:
    record = await get_file(services, principal, file_id)
    findings = await services.db.run(lambda d: file_store.findings(d, record.id))
    return render.pii_report(record, findings)
