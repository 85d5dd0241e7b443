"""Mistral's `POST /v1/ocr` as the simulator serves it: the real request and answer shapes.

The document arrives as a data URL (`document_url` or `image_url`); remote URLs are refused,
since the simulator reaches nothing. A PDF's pages are "read" from its text layer (pypdf),
so a test can check what comes back; an image, and a scanned PDF page (images and no text
layer), reads as a fixed sentence naming its digest.
Pages are 0-based; an index past the document is Mistral's 400.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
from collections.abc import Mapping
from typing import Any

from providers.sim.core import SimContext, SimRequest, SimResponse
from providers.sim.faults import apply_fault
from providers.sim.mistral import (
    VENDOR,
    MistralError,
    api_error,
    check_auth,
    check_model,
    fault_error,
    parse_body,
    validation_error,
)

OCR_FIELDS = frozenset(
    {
        "model", "id", "document", "pages", "include_image_base64", "image_limit",
        "image_min_size", "bbox_annotation_format", "document_annotation_format",
        "document_annotation_prompt", "table_format", "extract_header", "extract_footer",
        "include_blocks", "confidence_scores_granularity",
    }
)  # fmt: skip
DPI = 200


def _document(body: Mapping[str, Any]) -> tuple[str, bytes]:
    document = body.get("document")
    if not isinstance(document, dict) or document.get("type") not in (
        "document_url",
        "image_url",
    ):
        raise validation_error("union_tag_invalid", ["document"], "Input tag is not valid")
    url = document.get(document["type"])
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise api_error(400, "The simulator accepts documents as base64 data URLs only")
    kind, _, encoded = url[5:].partition(";base64,")
    try:
        return kind, base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise api_error(400, "The document is not valid base64") from None


def _pages(kind: str, data: bytes) -> list[str]:
    if kind != "application/pdf":
        digest = hashlib.sha256(data).hexdigest()[:8]
        return [f"Simulated OCR of image {digest}."]
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        return [_pdf_page(page) for page in reader.pages]
    except PdfReadError:
        raise api_error(400, "The document could not be read as a PDF") from None


def _pdf_page(page: Any) -> str:
    """A page's text layer; a scanned page (no text layer, only images) reads as an image
    would, since Mistral's OCR reads what the page shows, not only its text layer."""
    text = (page.extract_text() or "").strip()
    if text:
        return text
    images = b"".join(image.data for image in page.images)
    if not images:
        return ""
    return f"Simulated OCR of image {hashlib.sha256(images).hexdigest()[:8]}."


def _selected(body: Mapping[str, Any], count: int) -> list[int]:
    pages = body.get("pages")
    if pages is None:
        return list(range(count))
    if not isinstance(pages, list) or not all(isinstance(p, int) for p in pages):
        raise validation_error("list_type", ["pages"], "Input should be a valid list")
    for index in pages:
        if not 0 <= index < count:
            raise api_error(400, f"Page index {index} is out of range for {count} pages")
    return pages


def _split_tables(index: int, markdown: str) -> tuple[str, list[dict[str, str]]]:
    """With `table_format: "markdown"` Mistral answers each table apart, its place in the
    page's Markdown a link to it (`[tbl-0.md](tbl-0.md)`); without it, tables stay inline."""
    lines: list[str] = []
    tables: list[dict[str, str]] = []
    block: list[str] = []
    for line in [*markdown.splitlines(), ""]:
        if line.strip().startswith("|"):
            block.append(line.strip())
            continue
        if block:
            name = f"tbl-{index}-{len(tables)}.md"
            tables.append({"id": name, "content": "\n".join(block), "format": "markdown"})
            lines.append(f"[{name}]({name})")
            block = []
        lines.append(line)
    return "\n".join(lines[:-1]), tables


def _page_json(index: int, text: str, table_format: Any) -> dict[str, Any]:
    tables: list[dict[str, str]] = []
    if table_format == "markdown":
        text, tables = _split_tables(index, text)
    return {
        "index": index,
        "markdown": text,
        "images": [],
        "tables": tables,
        "hyperlinks": [],
        "dimensions": {"dpi": DPI, "height": 2200, "width": 1700},
    }


async def serve_ocr(request: SimRequest, ctx: SimContext) -> SimResponse:
    try:
        check_auth(request)
        body = parse_body(request, OCR_FIELDS)
        model = check_model(body)
        kind, data = _document(body)
        texts = _pages(kind, data)
        selected = _selected(body, len(texts))
        await apply_fault(ctx.fault(model, VENDOR), lambda f, _: fault_error(f))
    except MistralError as error:
        return error.response()
    payload = {
        "pages": [_page_json(i, texts[i], body.get("table_format")) for i in selected],
        "model": model,
        "document_annotation": None,
        "usage_info": {"pages_processed": len(selected), "doc_size_bytes": len(data)},
    }
    return SimResponse.of_json(payload)
