"""POST /v1/ocr: receive the document, plan the engines, read, answer in the spec's shape.

The upload streams to a temporary blob under the OCR rows of the size table (removed when
the request ends, whatever happens: OCR keeps nothing). The chain is Mistral's OCR model
through the upstream engine (when the workspace has Mistral active, with its retries,
breakers and usage record), then the `local` Tesseract engine on this machine, last: it
answers when Mistral is not configured, when its chain fails with a provider error, or when
the request names `model: local`. Usage is counted in pages.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import attrs
import trio

from gateway.kernels.uploads import integrity
from gateway.kernels.uploads.formats import LARGEST_UPLOAD, Kind
from gateway.kernels.uploads.receive import Received, receive, upload_deadline
from gateway.ocr import render
from gateway.ocr.input import LOCAL_MODEL, OCR_KINDS, OcrParams, parse_fields, select_pages
from gateway.ocr.services import OcrServices
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.upstream.facts import RequestFacts, new_facts
from gateway.upstream.limits import Hold
from gateway.upstream.options import ServiceOptions
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target, target_of
from gateway.upstream.usage import unplanned
from providers.base import Provider
from providers.local import ocr as local_ocr
from providers.ocr_types import OcrRequest, OcrResult
from providers.types import Usage
from store.blobs import BlobStore

LOCAL_TARGET = Target("local", "local-ocr", "tesseract", None)
MISTRAL_PROVIDER = "mistral"


async def serve_ocr(
    ocr: OcrServices,
    principal: Principal,
    chunks: AsyncIterator[bytes],
    boundary: bytes,
    headers: Mapping[str, str],
) -> render.OcrAnswer:
    """Answer one OCR request. Cancellation removes the temporary upload and propagates."""
    principal.require("files")
    started = time.perf_counter()
    facts = new_facts("ocr", principal, headers)
    with ocr.engine.usage.rejecting(facts):
        request, sources, params = await _checked(ocr, chunks, boundary)
    target, result, cost = await _read(ocr, facts, request, sources)
    if not any(page.text.strip() for page in result.pages):
        raise ApiError(422, "ocr_failed", "No text could be read from the document.")
    return render.ocr_response(
        "doc_" + secrets.token_hex(12),
        result,
        provider=target.provider_id,
        cost_usd=cost,
        processing_ms=int((time.perf_counter() - started) * 1000),
        output_format=params.output_format,
        tables=params.extract_tables,
        with_forms=params.extract_forms,
    )


async def _checked(
    ocr: OcrServices, chunks: AsyncIterator[bytes], boundary: bytes
) -> tuple[OcrRequest, list[local_ocr.PageSource], OcrParams]:
    """The upload received and checked (its form, its bytes, its page range), before any
    engine reads it: raises `ApiError` for the client's mistakes."""
    blobs = ocr.blobs
    with upload_deadline(ocr.settings.upload_timeout_s):
        received = await _receive(chunks, boundary, blobs)
    try:
        params = parse_fields(received.fields)
        await _check(received.writer.path, received.kind)
        data = await trio.to_thread.run_sync(received.writer.path.read_bytes)
    finally:
        blobs.discard(received.writer)
    sources = await _sources(data, received.kind)
    request = OcrRequest(
        model=params.model,
        document=data,
        content_type=received.kind.content_type,
        pages=select_pages(params.pages, len(sources)),
        languages=params.language_hints,
        extract_tables=params.extract_tables,
    )
    return request, sources, params


async def _receive(chunks: AsyncIterator[bytes], boundary: bytes, blobs: BlobStore) -> Received:
    """The body into a temporary blob. A type OCR does not read is a 400, as the spec's OCR
    status codes have it ("400 invalid or corrupted file"; unlike file uploads, no 415)."""
    try:
        return await receive(
            chunks, boundary, blobs, quota_left=LARGEST_UPLOAD, quota=LARGEST_UPLOAD,
            kinds=OCR_KINDS,
        )  # fmt: skip
    except ApiError as exc:
        if exc.status != 415:
            raise
        raise ApiError(
            400,
            "invalid_file_type",
            "OCR reads PDF, PNG, JPG/JPEG, TIFF/TIF, BMP and WebP files.",
            param="file",
        ) from None


async def read_pages(
    ocr: OcrServices,
    principal: Principal,
    data: bytes,
    kind: Kind,
    *,
    model: str,
    pages: tuple[int, ...] | None,
) -> OcrResult:
    """Read pages of a stored document through the OCR chain, for file processing (the
    `ocr_model` option): the same engines, limits and usage records as POST /v1/ocr."""
    sources = await _sources(data, kind)
    request = OcrRequest(model=model, document=data, content_type=kind.content_type, pages=pages)
    _, result, _ = await _read(ocr, new_facts("ocr", principal, {}), request, sources)
    return result


async def _check(path: Path, kind: Kind) -> None:
    problem = await trio.to_thread.run_sync(integrity.problem, path, kind)
    if problem is not None:
        raise ApiError(400, "invalid_file", problem, param="file")


async def _sources(data: bytes, kind: Kind) -> list[local_ocr.PageSource]:
    try:
        return await trio.to_thread.run_sync(local_ocr.page_sources, data, kind.content_type)
    except Exception as exc:  # the parser's own failure on a damaged document
        raise ApiError(400, "invalid_file", f"The {kind.name} file cannot be read: {exc}") from None


async def _read(
    ocr: OcrServices,
    facts: RequestFacts,
    request: OcrRequest,
    sources: list[local_ocr.PageSource],
) -> tuple[Target, OcrResult, float]:
    """Mistral through the engine when it can serve, else (or after its failure) local."""
    with ocr.engine.usage.refusing(facts, unplanned(request.model)):
        hold = await ocr.admission.admit(
            facts.principal,
            ServiceOptions(),
            prompt_tokens=0,
            max_tokens=0,
            plan=lambda: _pricing(ocr, request),
            usage=Usage(pages=len(sources)),
        )
    with hold:
        active = ocr.engine.active(facts.principal.workspace_id)
        if request.model != LOCAL_MODEL and MISTRAL_PROVIDER in active:
            try:
                return await _upstream(ocr, facts, request, len(sources), hold)
            except ApiError as exc:
                if exc.status < 500:
                    raise
        result = await local_ocr.read_document(request, sources, ocr.pages)
        ocr.engine.served(facts, LOCAL_TARGET, hold, result.usage)  # no race: priced here
        return LOCAL_TARGET, result, 0.0


async def _upstream(
    ocr: OcrServices, facts: RequestFacts, request: OcrRequest, total: int, hold: Hold
) -> tuple[Target, OcrResult, float]:
    plan = ocr.engine.plan_named(
        facts.principal,
        model=request.model,
        provider=None,
        fallbacks=(),
        capability="ocr",
        service=ServiceOptions(),
        catalog_fallbacks=True,
    )

    async def operation(adapter: Provider, target: Target) -> OcrResult:
        return await adapter.ocr(_for(request, target))

    served = await ocr.engine.call(
        facts,
        plan,
        operation,
        hold=hold,
        timeout_s=ocr.settings.upstream_timeout_s,
        meter=lambda value: value.usage,
    )
    result = OcrResult(
        model=served.target.model_id,
        pages=served.value.pages,
        total_pages=total,
        usage=served.value.usage,
    )
    return served.target, result, float(served.accounting.cost.total)


def _pricing(ocr: OcrServices, request: OcrRequest) -> Plan:
    """The model an agent's OCR request is priced at before it is served."""
    info = ocr.engine.catalog.model(request.model)
    return Plan(targets=() if info is None else (target_of(info),), capability="ocr")


def _for(request: OcrRequest, target: Target) -> OcrRequest:
    return attrs.evolve(request, model=target.upstream_model)
