"""Is an upload what it claims to be, and safe to open? Checked once, before it is stored.

Blocking (it opens the file): call it through `trio.to_thread.run_sync`. Returns the reason
the file is refused, or None. A ZIP container (DOCX, XLSX) is read from its central
directory only, never inflated, so a zip bomb is refused by its declared sizes before any
extraction could expand it.
"""

from __future__ import annotations

import wave
import zipfile
from pathlib import Path

from gateway.kernels.uploads.formats import Kind

# A ZIP-based office file whose members would expand past this, or any member of which
# would grow more than this ratio, is treated as a zip bomb.
MAX_UNZIPPED_BYTES = 256 * 1024 * 1024
MAX_RATIO = 200
_REQUIRED_MEMBER = {"docx": "word/document.xml", "xlsx": "xl/workbook.xml"}


def problem(path: Path, kind: Kind) -> str | None:
    try:
        if kind.name == "pdf":
            return _pdf(path)
        if kind.name in _REQUIRED_MEMBER:
            return _zip(path, kind.name)
        if kind.family == "image":
            return _image(path)
        if kind.name == "wav":
            with wave.open(str(path), "rb") as audio:
                return None if audio.getnframes() > 0 else "The WAV file holds no audio."
    except Exception as exc:  # any parser failure means the file is corrupt
        return f"The {kind.name} file is corrupt: {type(exc).__name__}."
    return None


def _pdf(path: Path) -> str | None:
    from pypdf import PdfReader

    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 2048))
        if b"%%EOF" not in handle.read():
            return "The PDF file is truncated (no end-of-file marker)."
    reader = PdfReader(path, strict=False)
    if reader.is_encrypted and not reader.decrypt(""):  # an empty password opens most
        return "The PDF file is protected by a password, so it cannot be read."
    return None if len(reader.pages) > 0 else "The PDF file has no pages."


def _zip(path: Path, name: str) -> str | None:
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        if _REQUIRED_MEMBER[name] not in {m.filename for m in members}:
            return f"The file is not a valid {name} document."
        total = sum(m.file_size for m in members)
        if total > MAX_UNZIPPED_BYTES:
            return f"The {name} file would expand to {total} bytes: refused as a zip bomb."
        for member in members:
            if member.file_size > MAX_RATIO * max(member.compress_size, 1) and (
                member.file_size > 1024 * 1024
            ):
                return f"The {name} file's member {member.filename} is a zip bomb."
    return None


def _image(path: Path) -> str | None:
    from PIL import Image

    with Image.open(path) as image:
        image.verify()
    return None
