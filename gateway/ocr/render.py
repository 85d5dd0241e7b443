"""The OCR response, exactly as the spec lists it: pure functions of the engine's result.

`output_format` shapes each page's `text`: `markdown` keeps what the engine gave (Mistral
answers in Markdown; the local engine's plain text is valid Markdown), `json` and `text`
give plain text (Markdown tables, headings and emphasis removed). Forms are the page's
`Key: value` lines, with the page's confidence.
"""

from __future__ import annotations

import re
from typing import Annotated, TypedDict

from gateway.platform.shapes import Range
from providers.catalog import round_cost
from providers.ocr_types import OcrPage, OcrResult

Confidence = Annotated[float, Range(least=0, most=1)]


class BoundingBox(TypedDict):
    x: float
    y: float
    width: float
    height: float


class OcrTable(TypedDict):
    """A table of the page, as rows of cells."""

    table_id: str
    rows: list[list[str]]
    bounding_box: BoundingBox


class OcrFormField(TypedDict):
    """A `Key: value` line of the page."""

    key: str
    value: str
    confidence: Confidence


class OcrPageObject(TypedDict):
    page_number: int
    text: str
    tables: list[OcrTable]
    forms: list[OcrFormField]
    confidence: Confidence


class OcrCost(TypedDict):
    usd: float


class OcrServed(TypedDict):
    """Who read the document, and what it cost."""

    provider: str
    model: str
    cost: OcrCost


class OcrAnswer(TypedDict):
    """The text, tables and forms of each page read."""

    document_id: str
    total_pages: int
    pages: list[OcrPageObject]
    processing_time_ms: int
    _gateway: OcrServed


_FORM_LINE = re.compile(r"^\s*([A-Z][\w .#/()-]{0,40}?)\s*:\s+(\S.{0,200})$")
_MARKUP = re.compile(r"^\s{0,3}#{1,6}\s+|\*\*|__|`")
# Where Mistral answered a table apart (`table_format: markdown`), the page's Markdown holds
# a link to it in its place: `[tbl-0.md](tbl-0.md)`.
_TABLE_LINK = re.compile(r"^\s*\[(tbl-[\w.-]+)\]\(\1\)\s*$")


def plain(markdown: str) -> str:
    lines = []
    for line in markdown.splitlines():
        if line.strip().startswith("|") or _TABLE_LINK.match(line):
            continue  # tables are reported as rows
        lines.append(_MARKUP.sub("", line))
    return "\n".join(lines).strip()


def forms(text: str, confidence: float) -> list[OcrFormField]:
    found: list[OcrFormField] = []
    for line in text.splitlines():
        match = _FORM_LINE.match(line)
        if match:
            found.append(
                {
                    "key": match.group(1).strip(),
                    "value": match.group(2).strip(),
                    "confidence": confidence,
                }
            )
    return found


def page_object(
    page: OcrPage, *, output_format: str, tables: bool, with_forms: bool
) -> OcrPageObject:
    confidence = page.confidence if page.confidence is not None else 1.0
    text = page.text if output_format == "markdown" else plain(page.text)
    return {
        "page_number": page.number,
        "text": text,
        "tables": [
            {
                "table_id": f"p{page.number}_t{index + 1}",
                "rows": [list(row) for row in table.rows],
                "bounding_box": _box(table.bounding_box),
            }
            for index, table in enumerate(page.tables)
        ]
        if tables
        else [],
        "forms": forms(plain(page.text), round(confidence, 3)) if with_forms else [],
        "confidence": round(confidence, 3),
    }


def ocr_response(
    document_id: str,
    result: OcrResult,
    *,
    provider: str,
    cost_usd: float,
    processing_ms: int,
    output_format: str,
    tables: bool,
    with_forms: bool,
) -> OcrAnswer:
    return {
        "document_id": document_id,
        "total_pages": result.total_pages,
        "pages": [
            page_object(p, output_format=output_format, tables=tables, with_forms=with_forms)
            for p in result.pages
        ],
        "processing_time_ms": processing_ms,
        "_gateway": {
            "provider": provider,
            "model": result.model,
            "cost": {"usd": round_cost(cost_usd)},
        },
    }


def _box(box: tuple[float, float, float, float]) -> BoundingBox:
    x, y, width, height = box
    return {"x": x, "y": y, "width": width, "height": height}
