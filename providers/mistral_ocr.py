"""Mistral's OCR API (`POST /v1/ocr`), as pure functions: the payload out, the answer back.

The document travels inline as a data URL (`document_url` for PDFs, `image_url` for
images), pages are 0-based on the wire, and with `table_format: "markdown"` tables come
apart from the page text as Markdown tables, which are read into rows here.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from providers.ocr_types import OcrPage, OcrRequest, OcrResult, OcrTable
from providers.types import JSON, Usage


def data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"


def ocr_payload(request: OcrRequest) -> JSON:
    url = data_url(request.content_type, request.document)
    if request.content_type == "application/pdf":
        document: JSON = {"type": "document_url", "document_url": url}
    else:
        document = {"type": "image_url", "image_url": url}
    payload: JSON = {"model": request.model, "document": document, "include_image_base64": False}
    if request.pages is not None:
        payload["pages"] = [number - 1 for number in request.pages]
    if request.extract_tables:
        payload["table_format"] = "markdown"
    return payload


def markdown_rows(markdown: str) -> tuple[tuple[str, ...], ...]:
    """The rows of a Markdown pipe table (the header row first, the rule row skipped)."""
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = tuple(cell.strip() for cell in line.strip("|").split("|"))
        if all(set(cell) <= set("-: ") and cell for cell in cells):
            continue
        rows.append(cells)
    return tuple(rows)


def _tables(page: Mapping[str, Any]) -> tuple[OcrTable, ...]:
    found = []
    for table in page.get("tables") or ():
        rows = markdown_rows(str(table.get("content", "")))
        if rows:
            found.append(OcrTable(rows=rows))
    return tuple(found)


def _page(page: Mapping[str, Any]) -> OcrPage:
    scores = page.get("confidence_scores") or {}
    confidence = scores.get("average_page_confidence_score") if isinstance(scores, dict) else None
    return OcrPage(
        number=int(page["index"]) + 1,
        text=str(page.get("markdown", "")),
        tables=_tables(page),
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
    )


def parse_ocr(data: Mapping[str, Any], request: OcrRequest, total_pages: int | None) -> OcrResult:
    pages: Sequence[Mapping[str, Any]] = data.get("pages") or ()
    parsed = tuple(_page(page) for page in pages)
    processed = int((data.get("usage_info") or {}).get("pages_processed", len(parsed)))
    return OcrResult(
        model=str(data.get("model") or request.model),
        pages=parsed,
        total_pages=total_pages if total_pages is not None else len(parsed),
        usage=Usage(pages=processed),
    )
