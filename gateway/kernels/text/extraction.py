"""Text out of a stored file, page by page, with well-kept parsers. Blocking: run in a thread.

PDF through pypdf (a page without a text layer is a scan: its embedded images go to OCR),
DOCX through python-docx (paragraphs, headings written as Markdown `#` headings, then
tables row by row), XLSX through openpyxl in
read-only mode (one page per sheet, cells separated by tabs), HTML through BeautifulSoup
(visible text only), CSV and the other text kinds as UTF-8. Images are OCR'd whole. Which
OCR engine reads is the caller's choice (`ocr`), so extraction stays free of engines.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from pathlib import Path

import attrs

from store.files import Page

# Reads the text of one image given as encoded bytes (PNG, JPEG, ...).
OcrReader = Callable[[bytes], str]


class ExtractionError(Exception):
    """The file cannot be read as its kind."""


@attrs.frozen
class Extracted:
    pages: tuple[Page, ...]
    ocr_pages: int  # how many pages were read by OCR


def extract(path: Path, kind: str, ocr: OcrReader) -> Extracted:
    if kind == "pdf":
        return _pdf(path, ocr)
    if kind in ("png", "jpg", "gif", "webp", "tiff", "bmp"):
        return Extracted((Page(1, ocr(path.read_bytes()).strip()),), 1)
    reader = _READERS.get(kind)
    if reader is None:
        raise ExtractionError(f"Text cannot be extracted from {kind} files.")
    return Extracted(tuple(Page(i + 1, text) for i, text in enumerate(reader(path))), 0)


def _pdf(path: Path, ocr: OcrReader) -> Extracted:
    from pypdf import PdfReader

    reader = PdfReader(path)
    pages: list[Page] = []
    scanned = 0
    for number, page in enumerate(reader.pages, start=1):
        text = (page.extract_text() or "").strip()
        if not text:
            images = [image.data for image in page.images]
            if images:
                scanned += 1
                text = "\n".join(ocr(data).strip() for data in images).strip()
        pages.append(Page(number, text))
    return Extracted(tuple(pages), scanned)


def _docx(path: Path) -> list[str]:
    import docx

    document = docx.Document(str(path))
    lines = [
        _docx_line(p.text, p.style.name if p.style is not None else None)
        for p in document.paragraphs
    ]
    for table in document.tables:
        for row in table.rows:
            lines.append("\t".join(cell.text for cell in row.cells))
    return ["\n".join(lines).strip()]


def _docx_line(text: str, style: str | None) -> str:
    """A paragraph's text; a heading (Word's `Title` and `Heading 1`-`Heading 6` styles) as a
    Markdown heading, so the document's sections reach semantic chunking's section headers."""
    level = 1 if style == "Title" else 0
    if style is not None and style.startswith("Heading ") and style[8:].isdigit():
        level = min(int(style[8:]), 6)
    return f"{'#' * level} {text}" if level and text.strip() else text


def _xlsx(path: Path) -> list[str]:
    import openpyxl

    # A file object, not the path: openpyxl judges a path by its extension, and blobs have none.
    handle = path.open("rb")
    book = openpyxl.load_workbook(handle, read_only=True, data_only=True)
    try:
        sheets = []
        for sheet in book.worksheets:
            rows = (
                "\t".join("" if v is None else str(v) for v in row)
                for row in sheet.iter_rows(values_only=True)
            )
            sheets.append("\n".join(r for r in rows if r.strip()))
        return sheets
    finally:
        book.close()
        handle.close()


def _html(path: Path) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_bytes(), "html.parser")
    for hidden in soup(["script", "style", "template", "noscript"]):
        hidden.decompose()
    lines = (line.strip() for line in soup.get_text("\n").splitlines())
    return ["\n".join(line for line in lines if line)]


def _text(path: Path) -> list[str]:
    raw = path.read_bytes()
    try:
        return [raw.decode("utf-8-sig").replace("\r\n", "\n")]
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"The text file is not UTF-8 (byte {exc.start}).") from None


def _csv(path: Path) -> list[str]:
    import csv

    with path.open(newline="", encoding="utf-8-sig") as handle:
        return ["\n".join("\t".join(row) for row in csv.reader(io.StringIO(handle.read())))]


def _doc(path: Path) -> list[str]:
    from gateway.kernels.text import word97

    try:
        return word97.read_text(path)
    except (word97.WordError, OSError, struct.error) as exc:
        raise ExtractionError(f"The Word 97 document cannot be read: {exc}") from None


_READERS: dict[str, Callable[[Path], list[str]]] = {
    "doc": _doc,
    "docx": _docx,
    "xlsx": _xlsx,
    "html": _html,
    "csv": _csv,
    "txt": _text,
    "md": _text,
    "json": _text,
    "jsonl": _text,
}
