"""The data-document answers (spec: Data document, document chunk): a TypedDict per
object (the OpenAPI document's schemas are written from them) and the pure functions that
build them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, TypedDict

from gateway.documents.input import Classification, MetadataValue
from gateway.kernels.text.chunking import STRATEGIES
from gateway.platform.answers import Time
from gateway.platform.shapes import Choices
from store.documents import STATUSES, DocumentRecord, StoredChunk

DocumentStatus = Annotated[str, Choices(STATUSES)]


class DataDocument(TypedDict):
    """A data document: `pending` or `processing`, then `completed` or `failed`."""

    id: str
    object: Literal["data.document"]
    name: str
    original_filename: str
    mime_type: str
    file_size_bytes: int
    data_classification: Classification
    chunking_strategy: Annotated[str, Choices(STRATEGIES)]
    chunk_size_tokens: int
    chunk_overlap_tokens: int
    chunk_count: int
    embedding_model: str | None
    status: DocumentStatus
    error_message: str | None
    residency_region: str
    retention_days: int | None
    metadata: dict[str, MetadataValue]
    created_at: Time
    updated_at: Time
    processing_time_seconds: float | None


class DocumentSummary(TypedDict):
    id: str
    name: str
    status: DocumentStatus
    chunk_count: int
    data_classification: Classification
    created_at: Time


class DocumentList(TypedDict):
    """A page of the workspace's data documents, newest first."""

    documents: list[DocumentSummary]
    total: int
    page: int
    page_size: int
    has_more: bool


class ChunkPlace(TypedDict):
    """Where the chunk's text is in the document's text (characters)."""

    start_char: int
    end_char: int


class DocumentChunk(TypedDict):
    chunk_id: str
    chunk_index: int
    content: str
    token_count: int
    page_number: int
    section_header: str | None
    metadata: ChunkPlace


class DocumentChunks(TypedDict):
    """A window of a document's chunks."""

    document_id: str
    document_name: str
    total_chunks: int
    total_tokens: int
    chunks: list[DocumentChunk]
    offset: int
    limit: int
    has_more: bool


class ErasedDocument(TypedDict):
    """A document erased with its chunks, vectors, index entries and bytes."""

    message: str
    document_id: str
    chunks_deleted: int


def document(record: DocumentRecord) -> DataDocument:
    return {
        "id": record.id,
        "object": "data.document",
        "name": record.name,
        "original_filename": record.original_filename,
        "mime_type": record.mime_type,
        "file_size_bytes": record.file_size_bytes,
        "data_classification": record.data_classification,
        "chunking_strategy": record.chunking_strategy,
        "chunk_size_tokens": record.chunk_size_tokens,
        "chunk_overlap_tokens": record.chunk_overlap_tokens,
        "chunk_count": record.chunk_count,
        "embedding_model": record.embedding_model,
        "status": record.status,
        "error_message": record.error_message,
        "residency_region": record.residency_region,
        "retention_days": record.retention_days,
        "metadata": dict(record.metadata),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "processing_time_seconds": record.processing_time_seconds,
    }


def document_list(
    records: Sequence[DocumentRecord], *, total: int, page: int, page_size: int
) -> DocumentList:
    return {
        "documents": [
            {
                "id": r.id,
                "name": r.name,
                "status": r.status,
                "chunk_count": r.chunk_count,
                "data_classification": r.data_classification,
                "created_at": r.created_at,
            }
            for r in records
        ],
        "total": total,
        "page": page,
        "page_size": page_size,
        "has_more": page * page_size < total,
    }


def chunk(item: StoredChunk) -> DocumentChunk:
    return {
        "chunk_id": item.chunk_id,
        "chunk_index": item.chunk_index,
        "content": item.content,
        "token_count": item.token_count,
        "page_number": item.page_number,
        "section_header": item.section_header,
        "metadata": {"start_char": item.start_char, "end_char": item.end_char},
    }


def chunks_page(
    record: DocumentRecord,
    items: Sequence[StoredChunk],
    *,
    total: int,
    tokens: int,
    limit: int,
    offset: int,
) -> DocumentChunks:
    return {
        "document_id": record.id,
        "document_name": record.name,
        "total_chunks": total,
        "total_tokens": tokens,
        "chunks": [chunk(c) for c in items],
        "offset": offset,
        "limit": limit,
        "has_more": offset + len(items) < total,
    }


def erased(document_id: str, chunks_deleted: int) -> ErasedDocument:
    return {
        "message": "The document and all its chunks were erased.",
        "document_id": document_id,
        "chunks_deleted": chunks_deleted,
    }
