"""What an upload is, told by its bytes, and how large each kind and purpose may be.

The spec's size table, as data: a purpose limit and a type limit, and an upload must stay
under both. The type comes from the first bytes (magic numbers); the filename's extension
only tells apart formats that share a container (DOCX and XLSX are both ZIP; CSV, Markdown
and plain text are all text). An upload whose bytes match nothing we know is a 415.
"""

from __future__ import annotations

import attrs

MB = 1024 * 1024
GB = 1024 * MB

PURPOSE_LIMITS: dict[str, int] = {
    "assistants": 512 * MB,
    "fine-tune": 1 * GB,
    "batch": 100 * MB,
    "document": 50 * MB,
    "audio": 25 * MB,
    # OpenAI's purposes for files given to models (`user_data`: documents read in a
    # chat or response; `vision`: images), as its SDK and docs send them. Its own limit
    # per file is 512 MB.
    "user_data": 512 * MB,
    "vision": 512 * MB,
}
LARGEST_UPLOAD = max(PURPOSE_LIMITS.values())

# Bytes needed to tell every kind below apart.
SNIFF_BYTES = 4096


@attrs.frozen
class Kind:
    name: str
    content_type: str
    limit: int
    family: str  # document, text, image, audio


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("pdf", "application/pdf", 50 * MB, "document"),
        Kind(
            "docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            50 * MB,
            "document",
        ),
        Kind(
            "xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            50 * MB,
            "document",
        ),
        Kind("doc", "application/msword", 50 * MB, "document"),
        Kind("csv", "text/csv", 50 * MB, "text"),
        Kind("txt", "text/plain", 10 * MB, "text"),
        Kind("md", "text/markdown", 10 * MB, "text"),
        Kind("html", "text/html", 10 * MB, "text"),
        # JSON Lines (batch and fine-tune inputs): the size table names no limit for it, so
        # only the purpose's applies.
        Kind("jsonl", "application/jsonl", LARGEST_UPLOAD, "text"),
        Kind("json", "application/json", 10 * MB, "text"),
        Kind("png", "image/png", 20 * MB, "image"),
        Kind("jpg", "image/jpeg", 20 * MB, "image"),
        Kind("gif", "image/gif", 20 * MB, "image"),
        Kind("webp", "image/webp", 20 * MB, "image"),
        Kind("tiff", "image/tiff", 50 * MB, "image"),
        Kind("bmp", "image/bmp", 20 * MB, "image"),
        Kind("mp3", "audio/mpeg", 25 * MB, "audio"),
        Kind("mp4", "audio/mp4", 25 * MB, "audio"),
        Kind("m4a", "audio/mp4", 25 * MB, "audio"),
        Kind("wav", "audio/wav", 25 * MB, "audio"),
        Kind("webm", "audio/webm", 25 * MB, "audio"),
    )
}

# Formats that share a container (ZIP, OLE), told apart by a declared media type when the
# file's name does not say.
_DECLARED = {KINDS[n].content_type: n for n in ("docx", "xlsx", "doc")}

_TEXT_EXTENSIONS = {
    "csv": "csv",
    "md": "md",
    "markdown": "md",
    "html": "html",
    "htm": "html",
    "jsonl": "jsonl",
    "json": "json",
    "txt": "txt",
}


def extension(filename: str) -> str:
    _, dot, ext = filename.rpartition(".")
    return ext.lower() if dot else ""


def sniff(head: bytes, filename: str, content_type: str | None = None) -> Kind | None:
    """The kind of an upload from its first bytes (and, for shared containers, its name, or
    else the part's declared Content-Type: a DOCX sent as `report` with its media type)."""
    ext = extension(filename)
    if ext not in KINDS and content_type in _DECLARED:
        ext = _DECLARED[content_type]
    name = _binary(head, ext)
    if name is None and _looks_like_text(head):
        name = _TEXT_EXTENSIONS.get(extension(filename), "txt")
        if name == "txt" and head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
            name = "html"
    return KINDS[name] if name else None


def _binary(head: bytes, ext: str) -> str | None:
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return ext if ext in ("docx", "xlsx") else None
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "doc" if ext == "doc" else None
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] in (b"WEBP", b"WAVE"):
        return "webp" if head[8:12] == b"WEBP" else "wav"
    if head[4:8] == b"ftyp":
        return "m4a" if head[8:11] == b"M4A" or ext == "m4a" else "mp4"
    if head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "mp3"
    return None


_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"BM", "bmp"),
    (b"ID3", "mp3"),
    (b"\x1aE\xdf\xa3", "webm"),
)


def _looks_like_text(head: bytes) -> bool:
    """UTF-8 without NUL bytes (a multi-byte character cut at the sniff edge is fine)."""
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True
