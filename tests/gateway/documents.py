"""Real documents made in the tests: a PDF with text, a scanned page, DOCX, XLSX, a WAV."""

from __future__ import annotations

import io
import math
import struct
import wave
import zipfile

from PIL import Image, ImageDraw, ImageFont


def pdf_with_text(pages: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def text_image(lines: list[str], *, fmt: str = "PNG", size: int = 36) -> bytes:
    """A page image with black text on white, as a scanner would give it."""
    font = ImageFont.load_default(size=size)
    image = Image.new("L", (1400, 120 + 70 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw.text((40, 50 + 70 * row), line, fill=0, font=font)
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


def scanned_pdf(lines: list[str]) -> bytes:
    """A PDF whose only page is an image of text: no text layer, OCR needed."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.image(io.BytesIO(text_image(lines)), x=10, y=10, w=190)
    return bytes(pdf.output())


def docx(paragraphs: list[str]) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx(rows: list[list[object]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def wav(seconds: float = 0.5, rate: int = 16000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(rate)
        frames = b"".join(
            struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
            for i in range(int(seconds * rate))
        )
        audio.writeframes(frames)
    return out.getvalue()


def zip_bomb_docx() -> bytes:
    """A DOCX-shaped ZIP whose document inflates to 64 MB of zeros (a ratio near 1,000)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1024 * 1024)
            for _ in range(64):
                member.write(block)
    return out.getvalue()
