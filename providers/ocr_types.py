"""Canonical OCR request and answer, shared by the OCR adapters (Mistral) and the local engine.

(To be folded into `providers/types/` with the other families.)
"""

from __future__ import annotations

import attrs

from providers.types import Usage


@attrs.frozen(kw_only=True)
class OcrRequest:
    """One document to read. `pages` are 1-based page numbers, None for every page."""

    model: str
    document: bytes = attrs.field(repr=False)
    content_type: str
    pages: tuple[int, ...] | None = None
    languages: tuple[str, ...] = ()
    extract_tables: bool = True


@attrs.frozen(kw_only=True)
class OcrTable:
    rows: tuple[tuple[str, ...], ...]
    # x, y, width, height in the page's pixels; zeros when the engine does not place tables.
    bounding_box: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)


@attrs.frozen(kw_only=True)
class OcrPage:
    number: int  # 1-based
    text: str
    tables: tuple[OcrTable, ...] = ()
    confidence: float | None = None  # 0-1 when the engine reports one


@attrs.frozen(kw_only=True)
class OcrResult:
    model: str
    pages: tuple[OcrPage, ...]
    total_pages: int
    usage: Usage
