"""The files endpoints' answers, as the spec lists them: pure functions of stored records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from gateway.kernels.text import PAGE_SEPARATOR
from store.files import Chunk, FileRecord, Finding, Page

STAGES = (
    "upload",
    "ocr",
    "transcription",
    "chunking",
    "embedding",
    "pii_detection",
    "classification",
)


def file_object(record: FileRecord, *, processing: bool = False) -> dict[str, Any]:
    """The File; `service` carries `processing`/`process_id` when processing was asked
    for, and with `processing=True` (the list's `include=processing`) the results too."""
    body: dict[str, Any] = {
        "id": record.id,
        "object": "file",
        "bytes": record.bytes,
        "created_at": record.created_at,
        "filename": record.filename,
        "purpose": record.purpose,
        "status": record.status,
        "status_details": record.status_details,
        "metadata": dict(record.metadata),
    }
    if record.process_id is not None:
        body["service"] = {"processing": True, "process_id": record.process_id}
        if processing:
            body["service"].update(_result_fields(record))
    return body


def _result_fields(record: FileRecord) -> dict[str, Any]:
    results = record.results
    return {
        "pages": results.get("pages", 0),
        "chunks": results.get("chunks", 0),
        "vectors_stored": results.get("vectors_stored", 0),
        "pii_detected": results.get("pii_findings", 0) > 0,
        "classification": results.get("classification"),
    }


def file_list(records: Sequence[FileRecord], *, has_more: bool, processing: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [file_object(r, processing=processing) for r in records],
        "has_more": has_more,
        "first_id": records[0].id if records else None,
        "last_id": records[-1].id if records else None,
    }


def patched(record: FileRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "file",
        "filename": record.filename,
        "metadata": dict(record.metadata),
    }


def deleted(file_id: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "deleted": True}


def status_record(record: FileRecord) -> dict[str, Any]:
    results = record.results
    return {
        "id": record.id,
        "status": record.status,
        "status_details": record.status_details,
        "processing": {
            "started_at": record.started_at,
            "completed_at": record.completed_at,
            "duration_ms": record.duration_ms,
            "stages": _stages(record),
        },
        "results": {
            "pages": results.get("pages", 0),
            "chunks": results.get("chunks", 0),
            "characters": results.get("characters", 0),
            "pii_findings": results.get("pii_findings", 0),
            "classification": results.get("classification"),
        },
    }


def content_disposition(filename: str) -> str:
    """`attachment` with the uploaded name (RFC 6266): a plain ASCII `filename` for every
    client, and `filename*` in UTF-8 when the name is not ASCII (a header carries Latin-1
    at most, so the raw name could not be sent)."""
    fallback = "".join(c if " " <= c < "\x7f" and c not in '"\\' else "_" for c in filename)
    header = f'attachment; filename="{fallback}"'
    if fallback != filename:
        header += "; filename*=UTF-8''" + quote(filename, safe="")
    return header


def _stages(record: FileRecord) -> dict[str, str]:
    """Each stage's services as the worker wrote it; before that, `upload` is complete (the
    file exists) and the others `pending` when processing is due (queued), else `skipped`."""
    unreached = "pending" if record.process_id is not None else "skipped"
    return {
        name: record.stages.get(name, "complete" if name == "upload" else unreached)
        for name in STAGES
    }


def full_text(pages: Sequence[Page]) -> str:
    """The document's text: its pages joined by a blank line. Chunk and PII offsets count
    characters in this string."""
    return PAGE_SEPARATOR.join(page.text for page in pages)


def text_record(record: FileRecord, pages: Sequence[Page]) -> dict[str, Any]:
    text = full_text(pages)
    return {
        "id": record.id,
        "text": text,
        "pages": [{"number": p.number, "text": p.text} for p in pages],
        "metadata": {
            "total_pages": len(pages),
            "total_characters": len(text),
            "language": record.language,
        },
    }


def chunks_record(record: FileRecord, chunks: Sequence[Chunk], total: int) -> dict[str, Any]:
    return {
        "id": record.id,
        "total_chunks": total,
        "chunks": [
            {
                "index": c.index,
                "text": c.text,
                "page": c.page,
                "start_char": c.start_char,
                "end_char": c.end_char,
                "tokens": c.tokens,
                "embedding_id": c.embedding_id,
            }
            for c in chunks
        ],
    }


def pii_report(record: FileRecord, findings: Sequence[Finding]) -> dict[str, Any]:
    summary: dict[str, int] = {}
    for finding in findings:
        summary[finding.type] = summary.get(finding.type, 0) + 1
    return {
        "id": record.id,
        "scan_completed_at": record.completed_at,
        "total_findings": len(findings),
        "findings": [
            {
                "type": f.type,
                "text": f.text,
                "location": {"page": f.page, "start": f.start, "end": f.end},
                "confidence": round(f.confidence, 3),
                "redacted": f.redacted,
            }
            for f in findings
        ],
        "summary": summary,
    }
