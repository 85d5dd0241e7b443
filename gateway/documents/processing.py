"""One data document through ingestion: extract, chunk, embed within its region, index.

Called by the document worker, one document per pool slot. Extraction (local OCR for scanned
PDF pages: the page images never leave the machine) and chunking are blocking and run in
worker threads. Embedding goes through the gateway's embeddings service, in the uploading
key's name (its limits, usage and cost apply), forced to the provider the residency rule
chose. A failure ends the document as `failed` with the reason in `error_message`.
Cancellation (the gateway stopping) leaves it `processing`; the worker resumes it at the
next start.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from pathlib import Path

import trio

from gateway.documents.residency import EmbeddingTarget, embedding_target
from gateway.documents.services import DocumentsServices
from gateway.kernels.text.chunking import Piece, chunk_document
from gateway.kernels.text.extraction import Extracted, ExtractionError, extract
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from providers.local import ocr as local_ocr
from store import documents as document_store
from store import keys
from store.documents import DocumentRecord, StoredChunk

EMBEDDING_BATCH = 64


class Failed(Exception):
    """The document cannot be processed; the message is its `error_message`."""


def embedding_models(services: DocumentsServices) -> list[str]:
    return [m.strip() for m in services.settings.document_embedding_models.split(",") if m.strip()]


async def process(services: DocumentsServices, record: DocumentRecord) -> None:
    """Process `record`; never raises for the document's own problems."""
    started = time.monotonic()
    await services.db.run(
        lambda d: document_store.update(d, record.id, status="processing", error_message=None)
    )
    try:
        chunks, target = await _ingest(services, record)
    except Failed as failure:
        message = str(failure)
        await services.db.run(
            lambda d: document_store.update(
                d,
                record.id,
                status="failed",
                error_message=message,
                processing_time_seconds=round(time.monotonic() - started, 3),
            )
        )
        return
    elapsed = round(time.monotonic() - started, 3)
    await services.db.run(
        lambda d: document_store.store_chunks(
            d,
            record.id,
            chunks,
            status="completed",
            error_message=None,
            embedding_model=target.model,
            embedding_provider=target.provider,
            processing_time_seconds=elapsed,
        )
    )
    workspace = record.workspace_id
    await services.runtime.index.add(
        workspace,
        record.id,
        lambda: services.db.run(
            lambda d: document_store.workspace_vectors(d, workspace, record.id)
        ),
    )


async def _ingest(
    services: DocumentsServices, record: DocumentRecord
) -> tuple[list[StoredChunk], EmbeddingTarget]:
    target = embedding_target(
        services.registry.configured(record.workspace_id),
        services.catalog,
        record.residency_region,
        embedding_models(services),
    )
    if target is None:
        raise Failed(
            f"No active embedding provider is configured for region "
            f"'{record.residency_region}'; the document was not sent outside its region. "
            "Set a provider's settings.region to allow one."
        )
    pages = (await _extract(services.runtime.blobs.path_of(record.sha256), record.kind)).pages

    def chunk() -> list[Piece]:
        return chunk_document(
            pages,
            strategy=record.chunking_strategy,
            size=record.chunk_size_tokens,
            overlap=record.chunk_overlap_tokens,
        )

    pieces = await trio.to_thread.run_sync(chunk)
    if not pieces:
        raise Failed("The document contains no text to index.")
    vectors = await _embed(services, record, target, [p.text for p in pieces])
    return [_stored(i, p, v) for i, (p, v) in enumerate(zip(pieces, vectors, strict=True))], target


async def _extract(path: Path, kind: str) -> Extracted:
    try:
        return await trio.to_thread.run_sync(extract, path, kind, local_ocr.read_text)
    except (ExtractionError, local_ocr.OcrEngineError) as exc:
        raise Failed(str(exc)) from None
    except Exception as exc:  # a parser's own failure on a damaged document
        raise Failed(f"The {kind} file could not be read: {exc}") from None


def _stored(index: int, piece: Piece, vector: bytes) -> StoredChunk:
    return StoredChunk(
        chunk_index=index,
        content=piece.text,
        token_count=piece.tokens,
        page_number=piece.page,
        section_header=piece.section_header,
        start_char=piece.start_char,
        end_char=piece.end_char,
        vector=vector,
    )


async def uploader(services: DocumentsServices, record: DocumentRecord) -> Principal:
    """The uploading key: upstream work for a document is done and billed in its name."""
    key = await services.db.run(lambda d: keys.get(d, record.key_id, record.workspace_id))
    if key is None or key.status != "active":
        raise Failed("The API key that uploaded the document is no longer active.")
    return Principal(key)


async def _embed(
    services: DocumentsServices,
    record: DocumentRecord,
    target: EmbeddingTarget,
    texts: Sequence[str],
) -> list[bytes]:
    principal = await uploader(services, record)
    vectors: list[bytes] = []
    for first in range(0, len(texts), EMBEDDING_BATCH):
        batch = list(texts[first : first + EMBEDDING_BATCH])
        vectors += await embed(services, principal, target, batch)
    return vectors


async def embed(
    services: DocumentsServices, principal: Principal, target: EmbeddingTarget, texts: list[str]
) -> list[bytes]:
    """Float32 little-endian vectors of `texts` from exactly `target` (no fallback: another
    provider could be outside the region), through the one engine."""
    body = {
        "model": target.model,
        "provider": target.provider,
        "input": texts,
        "encoding_format": "base64",
    }
    try:
        answer = await services.embed(principal, body)
    except ApiError as exc:
        raise Failed(f"Embedding failed ({exc.code}): {exc.message}") from None
    return [base64.b64decode(item["embedding"]) for item in answer["data"]]
