"""The data-document answers (spec: Data document, document chunk): pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from store.documents import DocumentRecord, StoredChunk


def document(record: DocumentRecord) -> dict[str, Any]:
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
) -> dict[str, Any]:
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


def chunk(item: StoredChunk) -> dict[str, Any]:
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
) -> dict[str, Any]:
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


def erased(document_id: str, chunks_deleted: int) -> dict[str, Any]:
    return {
        "message": "The document and all its chunks were erased.",
        "document_id": document_id,
        "chunks_deleted": chunks_deleted,
    }
