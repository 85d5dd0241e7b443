"""The files family (uploads, their derived records) and POST /v1/ocr.

Uploads are multipart: the file streams to the blob store while the size table is
enforced, so 413 (a limit), 415 (content of no supported type) and 507 (the workspace's
storage quota) are answers of the upload itself. Another workspace's file answers 404.
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
    deleted,
    filled,
    listing,
    nullable,
    obj,
    query,
)

TAG = "files"
OCR_TAG = "ocr"
ERRORS = (400, 401, 403, 404, 408, 413, 429)
UPLOAD_ERRORS = (*ERRORS, 415, 422, 507)
OCR_ERRORS = (*ERRORS, 422, 502, 503, 504)

PURPOSES = ["assistants", "fine-tune", "batch", "document", "audio"]
STATUSES = ["uploaded", "processing", "processed", "error"]
CLASSIFICATIONS = ["public", "internal", "confidential", "restricted", "phi"]
BINARY: Schema = {"type": "string", "format": "binary"}
UNIX: Schema = {"type": "integer", "description": "Unix seconds"}
FLAG: Schema = {"enum": ["true", "false"]}
METADATA: Schema = {
    "type": "object",
    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
}

FILE = obj(
    ("id", "object", "bytes", "created_at", "filename", "purpose", "status", "metadata"),
    id=STR,
    object={"const": "file"},
    bytes=INT,
    created_at=UNIX,
    filename=STR,
    purpose={"enum": PURPOSES},
    status={"enum": STATUSES},
    status_details=nullable(STR),
    metadata=ANY_OBJ,
    service=obj(
        ("processing", "process_id"),
        processing=BOOL,
        process_id=STR,
        pages=INT,
        chunks=INT,
        vectors_stored=INT,
        pii_detected=BOOL,
        classification=nullable(STR),
    ),
)

# The processing options, in the `service` object or each as its own form field. A model
# must be one the catalog has for the work (`invalid_model`), the overlap smaller than
# the chunk (`invalid_chunking`).
CHUNK_SIZE: Schema = {"type": "integer", "minimum": 16, "maximum": 8192}
CHUNK_OVERLAP: Schema = {"type": "integer", "minimum": 0, "maximum": 8191}
OPTIONS: dict[str, Schema] = dict(
    process=FLAG,
    ocr_model=filled(description="an OCR model, or `local`"),
    vectorize=FLAG,
    embedding_model=filled(description="an embeddings model"),
    chunk_size=CHUNK_SIZE,
    chunk_overlap=CHUNK_OVERLAP,
    detect_pii=FLAG,
    collection=filled(),
    auto_transcribe=FLAG,
    language=filled(),
    speaker_diarization=FLAG,
    classification={"enum": CLASSIFICATIONS},
    compliance_regime=filled(),
)
SERVICE_OPTIONS = closed(
    **(
        OPTIONS
        | {name: {"anyOf": [BOOL, FLAG]} for name, schema in OPTIONS.items() if schema is FLAG}
    )
)
UPLOAD_FORM = obj(
    ("file", "purpose"),
    file=BINARY,
    purpose={"enum": PURPOSES},
    metadata=METADATA | {"description": "sent as the JSON text of the object"},
    service=SERVICE_OPTIONS | {"description": "sent as the JSON text of the object"},
    **OPTIONS,
)

FILE_LIST = listing(FILE, has_more=BOOL, first_id=nullable(STR), last_id=nullable(STR))

LIMIT = query("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "default 20")

STATUS_RECORD = all_required(
    id=STR,
    status={"enum": STATUSES},
    status_details=nullable(STR),
    processing=all_required(
        started_at=nullable(UNIX),
        completed_at=nullable(UNIX),
        duration_ms=nullable(INT),
        stages={"type": "object", "additionalProperties": STR},
    ),
    results=all_required(
        pages=INT,
        chunks=INT,
        characters=INT,
        pii_findings=INT,
        classification=nullable(STR),
    ),
)

TEXT_RECORD = all_required(
    id=STR,
    text=STR,
    pages=arr(all_required(number=INT, text=STR)),
    metadata=all_required(
        total_pages=INT,
        total_characters=INT,
        language=nullable(STR),
    ),
)

CHUNKS = all_required(
    id=STR,
    total_chunks=INT,
    chunks=arr(
        obj(
            ("index", "text", "page", "start_char", "end_char", "embedding_id"),
            index=INT,
            text=STR,
            page=INT,
            start_char=INT,
            end_char=INT,
            tokens=INT,
            embedding_id=nullable(STR),
        )
    ),
)

PII_REPORT = all_required(
    id=STR,
    scan_completed_at=nullable(UNIX),
    total_findings=INT,
    findings=arr(
        all_required(
            type=STR,
            text=STR,
            location=all_required(page=INT, start=INT, end=INT),
            confidence={"type": "number", "minimum": 0, "maximum": 1},
            redacted=BOOL,
        )
    ),
    summary={"type": "object", "additionalProperties": INT},
)


def _file_op(
    summary: str,
    response: Schema,
    *,
    media_type: str = "application/json",
    params: tuple[Schema, ...] = (),
) -> Operation:
    """A read of one file's records: 404 for an unknown (or another workspace's) id."""
    return Operation(summary, TAG, response, errors=ERRORS, media_type=media_type, query=params)


SEARCH_REQUEST = closed(
    ("query",),
    query={"type": "string", "minLength": 1, "maxLength": 4000},
    top_k={"type": "integer", "minimum": 1, "maximum": 50},
    collection=nullable({"type": "string", "minLength": 1}),
    file_ids=nullable(arr(STR)),
    embedding_model=nullable({"type": "string", "minLength": 1}),
)

SEARCH_RESPONSE = all_required(
    object={"const": "list"},
    query=STR,
    data=arr(
        obj(
            ("file_id", "chunk_index", "text", "page", "score", "embedding_model"),
            file_id=STR,
            filename=STR,
            collection=nullable(STR),
            chunk_index=INT,
            text=STR,
            page=INT,
            start_char=INT,
            end_char=INT,
            score=NUM,
            embedding_model=STR,
        )
    ),
)

FILE_OPERATIONS = {
    "files.search_files": Operation(
        "Nearest chunks of the workspace's vectorized files (beyond the spec)",
        TAG,
        SEARCH_RESPONSE,
        request=SEARCH_REQUEST,
        errors=(400, 401, 403, 408, 429, 502, 503, 504),
        description="Cosine similarity through the in-memory vector index shared with data "
        "documents; the query is embedded by each model that embedded a wanted file.",
    ),
    "files.upload": Operation(
        "Upload a file (multipart), optionally queued for processing",
        TAG,
        FILE,
        request=UPLOAD_FORM,
        request_media_type="multipart/form-data",
        errors=UPLOAD_ERRORS,
        description="Processing options go in `service` (a JSON object) or as fields of "
        "their own; any of `process`, `vectorize`, `detect_pii`, `auto_transcribe` or "
        "`ocr_model` queues the file, and the answer's `service` names the process.",
    ),
    "files.list_files": Operation(
        "The workspace's files, newest first by default",
        TAG,
        FILE_LIST,
        errors=ERRORS,
        query=(
            query("purpose", {"enum": PURPOSES}),
            query("status", {"enum": STATUSES}),
            LIMIT,
            query("after", STR, "a file id: the page after it"),
            query("order", {"enum": ["asc", "desc"]}, "default desc"),
            query("include", {"enum": ["processing"]}, "adds the processing results"),
            query("collection", STR),
        ),
        description="`metadata.<key>=<value>` query parameters filter on metadata.",
    ),
    "files.read": _file_op("One file", FILE),
    "files.patch": Operation(
        "Replace a file's metadata",
        TAG,
        all_required(
            id=STR,
            object={"const": "file"},
            filename=STR,
            metadata=ANY_OBJ,
        ),
        request=all_required(metadata=METADATA) | {"additionalProperties": False},
        errors=ERRORS,
    ),
    "files.delete": _file_op(
        "Delete a file and everything derived from it",
        deleted("file"),
    ),
    "files.content": _file_op(
        "The file's bytes, with the Content-Type of their format",
        BINARY,
        media_type="*/*",
    ),
    "files.status": _file_op("The processing status record", STATUS_RECORD),
    "files.text": _file_op("The extracted text, whole and by page", TEXT_RECORD),
    "files.chunks": _file_op(
        "The text's chunks, a page at a time",
        CHUNKS,
        params=(LIMIT, query("offset", {"type": "integer", "minimum": 0}, "default 0")),
    ),
    "files.pii": _file_op("The personal data found in the text", PII_REPORT),
}

OCR_FORM = obj(
    ("file",),
    file={**BINARY, "description": "PDF, PNG, JPEG, TIFF, BMP or WebP"},
    extract_tables={"enum": ["true", "false", "1", "0"]},
    extract_forms={"enum": ["true", "false", "1", "0"]},
    pages={"type": "string", "description": "`all` (default), a page, `1-5`, or `1,3,5-7`"},
    language_hints={"type": "string", "description": "a JSON array or comma-separated codes"},
    output_format={"enum": ["json", "text", "markdown"]},
    model={"type": "string", "description": "default mistral-ocr-latest; `local` in-process"},
) | {"additionalProperties": False}

OCR_RESPONSE = all_required(
    document_id=STR,
    total_pages=INT,
    pages=arr(
        all_required(
            page_number=INT,
            text=STR,
            tables=arr(
                all_required(
                    table_id=STR,
                    rows=arr(arr(STR)),
                    bounding_box=all_required(x=NUM, y=NUM, width=NUM, height=NUM),
                )
            ),
            forms=arr(all_required(key=STR, value=STR, confidence=NUM)),
            confidence={"type": "number", "minimum": 0, "maximum": 1},
        )
    ),
    processing_time_ms=INT,
    _gateway=all_required(
        provider=STR,
        model=STR,
        cost=all_required(usd=NUM),
    ),
)

OPERATIONS = {
    **FILE_OPERATIONS,
    "ocr.ocr": Operation(
        "Read the text, tables and forms of a document or image (multipart)",
        OCR_TAG,
        OCR_RESPONSE,
        request=OCR_FORM,
        request_media_type="multipart/form-data",
        errors=OCR_ERRORS,
        description=(
            "400 `invalid_file_type` for a type OCR does not read (the spec's OCR codes have "
            "no 415), 422 `ocr_failed` when no text could be read from the document."
        ),
    ),
}
