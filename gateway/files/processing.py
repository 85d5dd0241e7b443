"""One file through the pipeline: extraction (with OCR), transcription, chunking, embedding,
PII/PHI detection, classification; the status record updated as each stage ends.

Called by the file-processing worker, one file per pool slot. Parsing, OCR, tokenizing and
scanning are blocking and run in worker threads (one at a time per file; the pool bounds how
many files run at once). A failure of any stage ends the file as `error` with the stage and
the reason in `status_details`. Cancellation (the gateway stopping) leaves the file in
`processing`; the worker resumes it at the next start.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import trio

from gateway.files import render
from gateway.files.input import ServiceOptions
from gateway.files.services import FilesServices
from gateway.kernels.pii import detector as pii
from gateway.kernels.pii import worker as pii_worker
from gateway.kernels.text import PAGE_SEPARATOR, chunking
from gateway.kernels.text.extraction import Extracted, ExtractionError, extract
from gateway.kernels.uploads.formats import KINDS
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from providers.audio_types import AudioClip
from providers.local import ocr as local_ocr
from store import files as file_store
from store import keys
from store.files import Chunk, FileRecord, Finding, Page

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
EMBEDDING_BATCH = 64


class StageFailed(Exception):
    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


class _Progress:
    """The status record of one run, written to the store as stages change."""

    def __init__(self, services: FilesServices, record: FileRecord) -> None:
        self.services = services
        self.record = record
        self.stages: dict[str, str] = {name: "pending" for name in render.STAGES}
        self.stages["upload"] = "complete"
        self.started = time.time()

    async def mark(self, stage: str, outcome: str, **changes: Any) -> None:
        self.stages[stage] = outcome
        stages = dict(self.stages)
        await self.services.db.run(
            lambda d: file_store.update(d, self.record.id, stages=stages, **changes)
        )


async def process(services: FilesServices, record: FileRecord) -> None:
    """Run the pipeline for `record`; never raises for the file's own problems."""
    progress = _Progress(services, record)
    await progress.mark(
        "upload",
        "complete",
        status="processing",
        started_at=int(progress.started),
        status_details=None,
        completed_at=None,
        duration_ms=None,
    )
    try:
        results = await _run(services, record, progress)
    except StageFailed as failure:
        await progress.mark(failure.stage, "failed", **_ended(progress, "error", failure.reason))
        return
    await services.db.run(
        lambda d: file_store.update(d, record.id, results=results, **_ended(progress, "processed"))
    )
    workspace = record.workspace_id
    await services.runtime.index.add(
        workspace,
        record.id,
        lambda: services.db.run(lambda d: file_store.workspace_vectors(d, workspace, record.id)),
    )


def _ended(progress: _Progress, status: str, details: str | None = None) -> dict[str, Any]:
    now = time.time()
    return {
        "status": status,
        "status_details": details,
        "completed_at": int(now),
        "duration_ms": int((now - progress.started) * 1000),
    }


async def _run(services: FilesServices, record: FileRecord, progress: _Progress) -> dict[str, Any]:
    options = ServiceOptions(**record.options)
    extracted = await _extract(services, record, progress, options)
    pages = extracted.pages
    chunks = await trio.to_thread.run_sync(
        lambda: chunking.chunk_pages(pages, size=options.chunk_size, overlap=options.chunk_overlap)
    )
    await progress.mark("chunking", "complete")
    scanned = await pii_worker.run_scan(
        pii.scan, pages, PAGE_SEPARATOR, limiter=services.runtime.pii_scans
    )
    findings: Sequence[Finding] = scanned if options.detect_pii else ()
    await services.db.run(
        lambda d: file_store.replace_derived(d, record.id, pages, chunks, findings)
    )
    vectors = 0
    if options.vectorize and chunks:
        vectors = await _embed(services, record, options, chunks)
        await progress.mark("embedding", "complete")
    else:
        await progress.mark("embedding", "skipped")
    await progress.mark("pii_detection", "complete" if options.detect_pii else "skipped")
    classification = options.classification or pii.classify(scanned)
    await progress.mark("classification", "complete")
    return {
        "pages": len(pages),
        "chunks": len(chunks),
        "characters": len(render.full_text(pages)),
        "pii_findings": len(findings),
        "vectors_stored": vectors,
        "classification": classification,
    }


async def _extract(
    services: FilesServices, record: FileRecord, progress: _Progress, options: ServiceOptions
) -> Extracted:
    if record.kind in ("mp3", "mp4", "m4a", "wav", "webm"):
        await progress.mark("ocr", "skipped")
        if not options.auto_transcribe:
            await progress.mark("transcription", "skipped")
            return Extracted((), 0)
        extracted = await transcribe(services, record, options)
        await progress.mark("transcription", "complete")
        return extracted
    path = services.runtime.blobs.path_of(record.sha256)
    found = services.capabilities
    upstream_ocr = (
        options.ocr_model not in (None, found.local_ocr_model) and record.kind in found.ocr_kinds
    )
    reader = _no_ocr if upstream_ocr else local_ocr.read_text
    try:
        extracted = await trio.to_thread.run_sync(extract, path, record.kind, reader)
    except (ExtractionError, local_ocr.OcrEngineError) as exc:
        raise StageFailed("upload", str(exc)) from None
    except Exception as exc:  # a parser's own failure on a damaged document
        raise StageFailed("upload", f"the {record.kind} file could not be read: {exc}") from None
    if upstream_ocr and extracted.ocr_pages:
        extracted = await _ocr_chain(services, record, options, extracted)
    await progress.mark("ocr", "complete" if extracted.ocr_pages else "skipped")
    await progress.mark("transcription", "skipped")
    return extracted


def _no_ocr(_: bytes) -> str:
    """Extraction's OCR reader when the OCR chain reads the pages afterwards."""
    return ""


async def _ocr_chain(
    services: FilesServices, record: FileRecord, options: ServiceOptions, extracted: Extracted
) -> Extracted:
    """The pages without a text layer, read through the OCR chain with `ocr_model`."""
    principal = await _uploader(services, record, "ocr")
    blank = tuple(page.number for page in extracted.pages if not page.text)
    data = await trio.to_thread.run_sync(services.runtime.blobs.path_of(record.sha256).read_bytes)
    try:
        result = await services.capabilities.read_pages(
            principal, data, KINDS[record.kind], str(options.ocr_model), blank
        )
    except ApiError as exc:
        raise StageFailed("ocr", f"{exc.code}: {exc.message}") from None
    read = {page.number: page.text.strip() for page in result.pages}
    pages = tuple(Page(p.number, read.get(p.number, p.text)) for p in extracted.pages)
    return Extracted(pages, extracted.ocr_pages)


async def _uploader(services: FilesServices, record: FileRecord, stage: str) -> Principal:
    """The uploading key (and an agent's session): upstream work for a file is done,
    limited and billed in its name."""
    key = await services.db.run(lambda d: keys.get(d, record.key_id, record.workspace_id))
    if key is None or key.status != "active":
        raise StageFailed(stage, "the API key that uploaded the file is no longer active")
    if record.agent_session is not None:  # an agent's upload: charged to its session
        return Principal(key, agent_session=record.agent_session)
    return Principal(key)


async def transcribe(
    services: FilesServices, record: FileRecord, options: ServiceOptions
) -> Extracted:
    """Audio to text through the gateway's transcription family, in the uploader's name:
    `language` as given, `speaker_diarization` through the model that diarizes. The
    transcript is the file's one page."""
    principal = await _uploader(services, record, "transcription")
    path = services.runtime.blobs.path_of(record.sha256)
    found = services.capabilities

    def clip() -> AudioClip:
        return found.measure_clip(path.read_bytes(), record.filename)

    try:
        text = await found.transcribe(
            principal,
            await trio.to_thread.run_sync(clip),
            options.language,
            options.speaker_diarization,
        )
    except ApiError as exc:
        raise StageFailed("transcription", f"{exc.code}: {exc.message}") from None
    return Extracted((Page(1, text),), 0)


async def _embed(
    services: FilesServices, record: FileRecord, options: ServiceOptions, chunks: Sequence[Chunk]
) -> int:
    """Embed the chunks through the gateway's own embeddings endpoint, in the uploader's
    name (their limits and usage apply); store one vector per chunk."""
    principal = await _uploader(services, record, "embedding")
    model = options.embedding_model or DEFAULT_EMBEDDING_MODEL
    stored = 0
    for first in range(0, len(chunks), EMBEDDING_BATCH):
        batch = chunks[first : first + EMBEDDING_BATCH]
        vectors = await embed_texts(services, principal, model, [c.text for c in batch])
        pairs = list(zip((c.index for c in batch), vectors, strict=True))
        stored += await services.db.run(
            lambda d, pairs=pairs: file_store.store_vectors(  # type: ignore[misc]
                d, record.id, collection=record.collection, model=model, vectors=pairs
            )
        )
    return stored


async def embed_texts(
    services: FilesServices, principal: Principal, model: str, texts: list[str]
) -> list[list[float]]:
    """The one way files reach an embedding provider (the retrieval family's service)."""
    try:
        answer = await services.capabilities.embed(principal, {"model": model, "input": texts})
    except ApiError as exc:
        raise StageFailed("embedding", f"{exc.code}: {exc.message}") from None
    return [item["embedding"] for item in answer["data"]]
