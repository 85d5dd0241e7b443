"""The files family (uploads, their derived records) and POST /v1/ocr.

Uploads are multipart: the file streams to the blob store while the size table is
enforced, so 413 (a limit), 415 (content of no supported type) and 507 (the workspace's
storage quota) are answers of the upload itself. Another workspace's file answers 404.
"""

from __future__ import annotations

from gateway.operator.apidoc import (
    INT,
    NUM,
    STR,
    Operation,
    all_required,
    arr,
    obj,
)

BINARY = {"type": "string", "format": "binary"}
OCR_TAG = "ocr"
ERRORS = (400, 401, 403, 404, 408, 413, 429)
UPLOAD_ERRORS = (*ERRORS, 415, 422, 507)
OCR_ERRORS = (*ERRORS, 422, 502, 503, 504)

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
