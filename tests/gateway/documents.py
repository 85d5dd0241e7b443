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


def encrypted_pdf(pages: list[str], *, user_password: str) -> bytes:
    """A PDF encrypted with `user_password` to open it (empty: anyone opens it, only the
    owner's permissions are restricted, as many published PDFs are)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(pdf_with_text(pages))))
    writer.encrypt(user_password=user_password, owner_password="owner secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


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
    """Paragraphs; one written `# Title` becomes a heading of Word's `Heading 1` style."""
    import docx as python_docx

    document = python_docx.Document()
    for paragraph in paragraphs:
        if paragraph.startswith("# "):
            document.add_heading(paragraph[2:], level=1)
        else:
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


def word97(pages: list[str], *, compressed: bool = True) -> bytes:
    """A Word 97-2003 .doc as Word lays it out ([MS-DOC]): an OLE compound file with a
    `WordDocument` stream (the File Information Block, then the text) and a `1Table`
    stream holding the piece table. The text is one piece, 8-bit (cp1252) when
    `compressed`, else UTF-16LE; paragraphs end with CR, pages with a form feed, and each
    page carries a field (instruction dropped, result kept)."""
    text = "\x0c".join(
        p.replace("\n", "\r") + "\r\x13 PAGE \x14" + str(n + 1) + "\x15\r"
        for n, p in enumerate(pages)
    )
    fib = bytearray(1024)
    struct.pack_into("<HH", fib, 0, 0xA5EC, 0x00C1)
    struct.pack_into("<H", fib, 0x0A, 0x0200)  # fWhichTblStm: the 1Table stream
    struct.pack_into("<H", fib, 32, 14)  # csw, then FibRgW97 (28 bytes)
    struct.pack_into("<H", fib, 62, 22)  # cslw, then FibRgLw97 (88 bytes)
    struct.pack_into("<i", fib, 64 + 12, len(text))  # ccpText
    struct.pack_into("<H", fib, 152, 93)  # cbRgFcLcb, then FibRgFcLcb97
    body = text.encode("cp1252") if compressed else text.encode("utf-16-le")
    fc = len(fib) * 2 | 0x40000000 if compressed else len(fib)
    plc = struct.pack("<II", 0, len(text)) + struct.pack("<HIH", 0, fc, 0)
    clx = b"\x01" + struct.pack("<h", 2) + b"\x00\x00" + b"\x02" + struct.pack("<I", len(plc)) + plc
    struct.pack_into("<II", fib, 154 + 33 * 8, 0, len(clx))  # fcClx, lcbClx
    return _compound({"WordDocument": bytes(fib) + body, "1Table": clx})


def _compound(streams: dict[str, bytes]) -> bytes:
    """An OLE compound file (version 3, 512-byte sectors) holding `streams` at the root;
    each is padded with zeros to 4,096 bytes or more, so that all live in regular sectors
    (a smaller stream would belong in the mini stream)."""
    end, free, fat_sector, no_stream = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFFFF
    fat = [fat_sector, end]  # sector 0: the FAT, sector 1: the directory
    data, starts = b"", []
    for content in streams.values():
        padded = content.ljust(max(4096, -(-len(content) // 512) * 512), b"\x00")
        first = 2 + len(data) // 512
        count = len(padded) // 512
        starts.append((first, len(padded)))
        fat.extend([*range(first + 1, first + count), end])
        data += padded
    fat_bytes = struct.pack(f"<{len(fat)}I", *fat).ljust(512, b"\xff")

    def entry(
        name: str, kind: int, start: int, size: int, left: int, right: int, child: int
    ) -> bytes:
        encoded = (name + "\x00").encode("utf-16-le") if name else b""
        return (
            encoded.ljust(64, b"\x00")
            + struct.pack("<HBB", len(encoded), kind, 1)
            + struct.pack("<III", left, right, child)
            + bytes(16 + 4 + 16)
            + struct.pack("<IQ", start, size)
        )

    names = list(streams)  # ordered so that names[1] (shorter) is the left sibling
    directory = entry("Root Entry", 5, end, 0, no_stream, no_stream, 1)
    directory += entry(names[0], 2, *starts[0], 2, no_stream, no_stream)
    directory += entry(names[1], 2, *starts[1], no_stream, no_stream, no_stream)
    directory += entry("", 0, 0, 0, no_stream, no_stream, no_stream)
    header = (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
        + bytes(16)
        + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
        + bytes(6)
        + struct.pack("<IIIIIIIII", 0, 1, 1, 0, 4096, end, 0, end, 0)
        + struct.pack("<109I", 0, *([free] * 108))
    )
    return header + fat_bytes + directory + data
