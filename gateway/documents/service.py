"""The data-document endpoints: upload, list, read, chunks, erase.

Orchestration only: validation in `input`, answers in `render`, who may read what in
`access`, SQL in `store.documents`. Every read is scoped to the caller's workspace and to
the classifications it may read, so another workspace's document (or one it may not see)
answers 404 exactly like an unknown id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta

import trio

from gateway.documents import access, render
from gateway.documents import input as document_input
from gateway.documents.erasure import erase_document
from gateway.documents.services import DocumentsServices
from gateway.kernels.uploads import formats, integrity
from gateway.kernels.uploads.receive import Received, receive, upload_deadline
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, not_found
from store import columns
from store import documents as document_store
from store.audit import AuditEvent
from store.documents import DocumentRecord


def document_not_found(document_id: str) -> ApiError:
    return not_found("document_not_found", f"No data document '{document_id}'.", param="id")


async def upload(
    services: DocumentsServices, principal: Principal, chunks: AsyncIterator[bytes], boundary: bytes
) -> render.DataDocument:
    """Store one document and queue its processing; the Data document (`pending`).

    Cancellation (a client gone mid-upload) removes the partial blob and propagates.
    """
    principal.require("files")
    runtime = services.runtime
    with upload_deadline(services.settings.upload_timeout_s):
        received = await _receive(services, chunks, boundary)
    try:
        form = document_input.upload_form(received.fields)
        access.require_readable(principal, form.data_classification)
        await _check_integrity(received)
    except BaseException:
        runtime.blobs.discard(received.writer)
        raise
    async with runtime.blob_lock:
        digest = await trio.to_thread.run_sync(runtime.blobs.commit, received.writer)
        record = _new_record(principal, received, form, digest)
        await services.db.run(lambda d: document_store.insert(d, record))
    await runtime.queue.enqueue(record.id)
    return render.document(record)


async def _receive(
    services: DocumentsServices, chunks: AsyncIterator[bytes], boundary: bytes
) -> Received:
    """The body into a temporary blob; a type outside the spec's table is a 400."""
    largest = formats.LARGEST_UPLOAD
    try:
        return await receive(
            chunks,
            boundary,
            services.runtime.blobs,
            quota_left=largest,
            quota=largest,
            kinds=document_input.KIND_LIMITS,
        )
    except ApiError as exc:
        if exc.status != 415:
            raise
        kinds = ", ".join(document_input.KIND_LIMITS)
        raise ApiError(
            400,
            "invalid_file_type",
            f"Data documents must be one of: {kinds} (htm counts as html).",
            param="file",
        ) from None


async def _check_integrity(received: Received) -> None:
    problem = await trio.to_thread.run_sync(integrity.problem, received.writer.path, received.kind)
    if problem is not None:
        raise ApiError(400, "invalid_file", problem, param="file")


def _new_record(
    principal: Principal,
    received: Received,
    form: document_input.DocumentForm,
    digest: str,
) -> DocumentRecord:
    now = datetime.now(UTC)
    expires = None if form.retention_days is None else (now + timedelta(days=form.retention_days))
    return DocumentRecord(
        organization_id=principal.organization_id,
        workspace_id=principal.workspace_id,
        key_id=principal.key_id,
        name=form.name or received.filename,
        original_filename=received.filename,
        mime_type=received.kind.content_type,
        kind=received.kind.name,
        file_size_bytes=received.writer.size,
        sha256=digest,
        data_classification=form.data_classification,
        chunking_strategy=form.chunking_strategy,
        chunk_size_tokens=form.chunk_size_tokens,
        chunk_overlap_tokens=form.chunk_overlap_tokens,
        residency_region=form.residency_region,
        retention_days=form.retention_days,
        expires_at=None if expires is None else expires.timestamp(),
        metadata=form.metadata,
        created_at=columns.to_iso(now),
        updated_at=columns.to_iso(now),
    )


async def get_document(
    services: DocumentsServices, principal: Principal, document_id: str
) -> DocumentRecord:
    principal.require("files")
    record = await services.db.run(
        lambda d: document_store.get(d, principal.workspace_id, document_id)
    )
    if record is None or record.data_classification not in access.readable(principal):
        raise document_not_found(document_id)
    return record


async def list_documents(
    services: DocumentsServices, principal: Principal, args: Mapping[str, str]
) -> render.DocumentList:
    principal.require("files")
    parsed = document_input.list_args(args)
    query = document_store.ListQuery(
        workspace_id=principal.workspace_id,
        classifications=access.readable(principal),
        page=parsed.page,
        page_size=parsed.page_size,
        status=parsed.status,
        classification=parsed.classification,
    )
    records, total = await services.db.run(lambda d: document_store.list_documents(d, query))
    return render.document_list(records, total=total, page=parsed.page, page_size=parsed.page_size)


async def chunks(
    services: DocumentsServices, principal: Principal, document_id: str, args: Mapping[str, str]
) -> render.DocumentChunks:
    """A window of the chunks; a document whose processing failed answers 422 with why."""
    limit, offset = document_input.chunk_window(args)
    record = await get_document(services, principal, document_id)
    if record.status == "failed":
        raise ApiError(
            422,
            "processing_failed",
            f"The document's processing failed: {record.error_message}",
            document_id=record.id,
        )
    found, total, tokens = await services.db.run(
        lambda d: document_store.chunks(d, record.id, limit=limit, offset=offset)
    )
    return render.chunks_page(record, found, total=total, tokens=tokens, limit=limit, offset=offset)


async def delete(
    services: DocumentsServices, principal: Principal, document_id: str, event: AuditEvent
) -> render.ErasedDocument:
    """Erase the document and every copy of its content (see `erasure`)."""
    await get_document(services, principal, document_id)
    erased = await erase_document(services, principal.workspace_id, document_id, event)
    if erased is None:
        raise document_not_found(document_id)
    return render.erased(document_id, erased.chunks_deleted)
