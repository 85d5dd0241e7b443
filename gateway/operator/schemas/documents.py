"""Data documents (spec: Data documents) and the hybrid search beyond the spec.

Uploads are multipart and streamed to the family's own blob store; the spec's size table
gives 413, a type outside it 400. Processing is asynchronous: a document reads `pending`
or `processing`, then `completed` or `failed` (its chunks then answer 422). Another
workspace's document, or one of a classification the caller may not read, answers 404.
"""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    BOOL,
    INT,
    NUM,
    STR,
    Operation,
    Schema,
    all_required,
    arr,
    closed,
    nullable,
    obj,
    query,
)

TAG = "data documents"
ERRORS = (400, 401, 403, 404, 408, 413, 429)
CLASSIFICATIONS = ["public", "internal", "confidential", "phi", "privileged"]
STRATEGIES = ["semantic", "fixed", "paragraph"]
STATUSES = ["pending", "processing", "completed", "failed"]
ISO: Schema = {"type": "string", "format": "date-time"}
DIGITS: Schema = {"type": "string", "pattern": "^[0-9]+$"}

DOCUMENT = obj(
    (
        "id",
        "name",
        "original_filename",
        "mime_type",
        "file_size_bytes",
        "data_classification",
        "chunking_strategy",
        "chunk_count",
        "status",
        "residency_region",
        "retention_days",
        "metadata",
        "created_at",
        "updated_at",
    ),
    id=STR,
    name=STR,
    original_filename=STR,
    mime_type=STR,
    file_size_bytes=INT,
    data_classification={"enum": CLASSIFICATIONS},
    chunking_strategy={"enum": STRATEGIES},
    chunk_size_tokens=INT,
    chunk_overlap_tokens=INT,
    chunk_count=INT,
    embedding_model=nullable(STR),
    status={"enum": STATUSES},
    error_message=nullable(STR),
    residency_region=STR,
    retention_days=nullable(INT),
    metadata=ANY_OBJ,
    created_at=ISO,
    updated_at=ISO,
    processing_time_seconds=nullable(NUM),
)

UPLOAD_FORM = closed(
    ("file",),
    file={"type": "string", "format": "binary", "description": "pdf, docx, doc, txt, md, html"},
    name={"type": "string", "minLength": 1, "maxLength": 255},
    data_classification={"enum": CLASSIFICATIONS},
    chunking_strategy={"enum": STRATEGIES},
    chunk_size_tokens=DIGITS | {"description": "100-2000, default 512"},
    chunk_overlap_tokens=DIGITS | {"description": "0-200, default 50"},
    residency_region={"type": "string", "pattern": "^[a-z0-9-]{1,32}$"},
    retention_days=DIGITS | {"description": "days; absent keeps the document"},
    metadata={"type": "string", "description": "a JSON object serialized as a string"},
)

DOCUMENT_LIST = all_required(
    documents=arr(
        obj(
            ("id", "name", "status", "chunk_count", "created_at"),
            id=STR,
            name=STR,
            status={"enum": STATUSES},
            chunk_count=INT,
            data_classification={"enum": CLASSIFICATIONS},
            created_at=ISO,
        )
    ),
    total=INT,
    page=INT,
    page_size=INT,
    has_more=BOOL,
)

CHUNK = obj(
    ("chunk_id", "chunk_index", "content", "token_count", "page_number", "section_header"),
    chunk_id=STR,
    chunk_index=INT,
    content=STR,
    token_count=INT,
    page_number=INT,
    section_header=nullable(STR),
    metadata=ANY_OBJ,
)

CHUNKS = all_required(
    document_id=STR,
    document_name=STR,
    total_chunks=INT,
    total_tokens=INT,
    chunks=arr(CHUNK),
    offset=INT,
    limit=INT,
    has_more=BOOL,
)

SEARCH_REQUEST = closed(
    ("query",),
    query={"type": "string", "minLength": 1, "maxLength": 4000},
    top_k={"type": "integer", "minimum": 1, "maximum": 50},
    filters=nullable(
        closed(
            (),
            classification=nullable(
                {
                    "oneOf": [
                        {"enum": CLASSIFICATIONS},
                        arr({"enum": CLASSIFICATIONS}) | {"minItems": 1},
                    ]
                }
            ),
            document_ids=nullable(arr(STR)),
            metadata=nullable(
                {
                    "type": "object",
                    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
                }
            ),
        )
    ),
    rerank=nullable({"oneOf": [BOOL, {"type": "string", "minLength": 1}]}),
)

SEARCH_RESPONSE = all_required(
    object={"const": "list"},
    query=STR,
    data=arr(
        obj(
            ("document_id", "chunk_id", "content", "page_number", "score"),
            document_id=STR,
            document_name=STR,
            data_classification={"enum": CLASSIFICATIONS},
            chunk_id=STR,
            chunk_index=INT,
            content=STR,
            page_number=INT,
            section_header=nullable(STR),
            score=NUM,
            scores=ANY_OBJ,
        )
    ),
)

OPERATIONS = {
    "documents.upload": Operation(
        "Upload a data document (multipart) for chunking, embedding and search",
        TAG,
        DOCUMENT,
        request=UPLOAD_FORM,
        request_media_type="multipart/form-data",
        errors=ERRORS,
        description="Answers the document `pending`; processing moves it to `completed` or "
        "`failed`. Only a provider of `residency_region` embeds it.",
    ),
    "documents.list_documents": Operation(
        "The workspace's data documents, newest first",
        TAG,
        DOCUMENT_LIST,
        errors=ERRORS,
        query=(
            query("page", {"type": "integer", "minimum": 1}, "default 1"),
            query("page_size", {"type": "integer", "minimum": 1, "maximum": 100}, "default 20"),
            query("status", {"enum": STATUSES}),
            query("classification", {"enum": CLASSIFICATIONS}),
        ),
    ),
    "documents.read": Operation("One data document", TAG, DOCUMENT, errors=ERRORS),
    "documents.chunks": Operation(
        "A window of the document's chunks",
        TAG,
        CHUNKS,
        errors=(*ERRORS, 422),
        query=(
            query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "default 50"),
            query("offset", {"type": "integer", "minimum": 0}, "default 0"),
        ),
        description="422 `processing_failed` for a document whose processing failed.",
    ),
    "documents.delete": Operation(
        "Erase the document, its chunks, vectors, index entries and bytes",
        TAG,
        all_required(
            message=STR,
            document_id=STR,
            chunks_deleted=INT,
        ),
        errors=ERRORS,
    ),
    "documents.search_documents": Operation(
        "Hybrid search (vectors and BM25, fused) over the workspace's data documents",
        TAG,
        SEARCH_RESPONSE,
        request=SEARCH_REQUEST,
        errors=(400, 401, 403, 408, 429, 502, 503, 504),
        description="Beyond the spec. `rerank` reorders the best candidates through a rerank "
        "model (true: rerank-v3.5).",
    ),
}
