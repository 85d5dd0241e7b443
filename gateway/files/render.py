"""The files endpoints' answers, as the spec lists them: a TypedDict per object (the
OpenAPI document's schemas are written from them) and the pure functions of stored
records that build them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, NotRequired, TypedDict
from urllib.parse import quote

from gateway.files.input import CLASSIFICATIONS, PURPOSES, MetadataValue
from gateway.kernels.text import PAGE_SEPARATOR
from gateway.platform.shapes import Choices, Doc, Range
from store.files import STATUSES, Chunk, FileRecord, Finding, Page

Unix = Annotated[int, Doc("Unix seconds")]
FileStatus = Annotated[str, Choices(STATUSES)]
Classification = Annotated[str, Choices(CLASSIFICATIONS)] | None
StageState = Annotated[str, Doc("`complete`, `pending`, `skipped` or `failed`")]


class FileService(TypedDict):
    """A file's processing: its process id, and with `include=processing` its results."""

    processing: bool
    process_id: str
    pages: NotRequired[int]
    chunks: NotRequired[int]
    vectors_stored: NotRequired[int]
    pii_detected: NotRequired[bool]
    classification: NotRequired[Classification]


class File(TypedDict):
    """An uploaded file."""

    id: str
    object: Literal["file"]
    bytes: int
    created_at: Unix
    filename: str
    purpose: Annotated[str, Choices(PURPOSES)]
    status: FileStatus
    status_details: str | None
    metadata: dict[str, MetadataValue]
    service: NotRequired[FileService]


class FileList(TypedDict):
    """A page of the workspace's files."""

    object: Literal["list"]
    data: list[File]
    has_more: bool
    first_id: str | None
    last_id: str | None


class PatchedFile(TypedDict):
    """A file whose metadata was replaced."""

    id: str
    object: Literal["file"]
    filename: str
    metadata: dict[str, MetadataValue]


class DeletedFile(TypedDict):
    """A deleted file."""

    id: str
    object: Literal["file"]
    deleted: Literal[True]


class ProcessingTimes(TypedDict):
    started_at: Unix | None
    completed_at: Unix | None
    duration_ms: int | None
    stages: dict[str, StageState]


class ProcessingResults(TypedDict):
    pages: int
    chunks: int
    characters: int
    pii_findings: int
    classification: Classification


class FileStatusRecord(TypedDict):
    """A file's processing status."""

    id: str
    status: FileStatus
    status_details: str | None
    processing: ProcessingTimes
    results: ProcessingResults


class PageText(TypedDict):
    number: int
    text: str


class TextFacts(TypedDict):
    total_pages: int
    total_characters: int
    language: str | None


class FileText(TypedDict):
    """A file's extracted text, whole and by page."""

    id: str
    text: str
    pages: list[PageText]
    metadata: TextFacts


class FileChunk(TypedDict):
    """A chunk of a file's text; offsets count characters of the whole text."""

    index: int
    text: str
    page: int
    start_char: int
    end_char: int
    tokens: int
    embedding_id: str | None


class FileChunks(TypedDict):
    id: str
    total_chunks: int
    chunks: list[FileChunk]


class PiiLocation(TypedDict):
    page: int
    start: int
    end: int


class PiiFinding(TypedDict):
    type: str
    text: str
    location: PiiLocation
    confidence: Annotated[float, Range(least=0, most=1)]
    redacted: bool


class PiiReport(TypedDict):
    """The personal data found in a file's text, and how many of each type."""

    id: str
    scan_completed_at: Unix | None
    total_findings: int
    findings: list[PiiFinding]
    summary: dict[str, int]


STAGES = (
    "upload",
    "ocr",
    "transcription",
    "chunking",
    "embedding",
    "pii_detection",
    "classification",
)


def file_object(record: FileRecord, *, processing: bool = False) -> File:
    """The File; `service` carries `processing`/`process_id` when processing was asked
    for, and with `processing=True` (the list's `include=processing`) the results too."""
    body: File = {
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
        body["service"] = _service(record, record.process_id, processing=processing)
    return body


def _service(record: FileRecord, process_id: str, *, processing: bool) -> FileService:
    service: FileService = {"processing": True, "process_id": process_id}
    if processing:
        results = record.results
        service["pages"] = results.get("pages", 0)
        service["chunks"] = results.get("chunks", 0)
        service["vectors_stored"] = results.get("vectors_stored", 0)
        service["pii_detected"] = results.get("pii_findings", 0) > 0
        service["classification"] = results.get("classification")
    return service


def file_list(records: Sequence[FileRecord], *, has_more: bool, processing: bool) -> FileList:
    return {
        "object": "list",
        "data": [file_object(r, processing=processing) for r in records],
        "has_more": has_more,
        "first_id": records[0].id if records else None,
        "last_id": records[-1].id if records else None,
    }


def patched(record: FileRecord) -> PatchedFile:
    return {
        "id": record.id,
        "object": "file",
        "filename": record.filename,
        "metadata": dict(record.metadata),
    }


def deleted(file_id: str) -> DeletedFile:
    return {"id": file_id, "object": "file", "deleted": True}


def status_record(record: FileRecord) -> FileStatusRecord:
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


def text_record(record: FileRecord, pages: Sequence[Page]) -> FileText:
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


def chunks_record(record: FileRecord, chunks: Sequence[Chunk], total: int) -> FileChunks:
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


def pii_report(record: FileRecord, findings: Sequence[Finding]) -> PiiReport:
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
