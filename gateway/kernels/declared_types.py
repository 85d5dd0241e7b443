"""What a client declared an upload to be, held against what its bytes are. Pure.

An upload's type is judged by its bytes (`gateway.kernels.uploads.formats.sniff`, and for audio
`providers.audio_codec.sniff_container`); the client declares one twice, by the file
name's extension and by the part's Content-Type. A declaration that names a format of
another family than the bytes' is a lie the client should hear about: a PNG sent as
`scan.pdf` with `Content-Type: application/pdf` is a 400 `file_type_mismatch` naming both,
on every upload family (files, OCR, data documents, audio).

Only declarations this table knows are judged: `application/octet-stream`, a missing
type, an extension or a media type not listed here declare nothing (so the CSV that
Windows browsers send as `application/vnd.ms-excel` is not refused). Formats that clients
name interchangeably are one family: every text format (a `.json` file sent as
`text/plain`), DOCX and XLSX (both ZIP, told apart by the name), MP3 and MPEG audio, MP4
and M4A.
"""

from __future__ import annotations

import attrs

from gateway.platform.errors import ApiError

GENERIC_MEDIA_TYPES = frozenset({"application/octet-stream", "binary/octet-stream"})


@attrs.frozen
class Family:
    """Formats a client may name for one another: the names the sniffers give them, the
    extensions and the media types that declare them."""

    name: str
    formats: frozenset[str]
    extensions: frozenset[str]
    media_types: frozenset[str]


def _family(name: str, formats: str, extensions: str, media_types: str) -> Family:
    return Family(
        name,
        frozenset(formats.split()),
        frozenset(extensions.split()),
        frozenset(media_types.split()),
    )


_OFFICE = "application/vnd.openxmlformats-officedocument"
FAMILIES = (
    _family("pdf", "pdf", "pdf", "application/pdf application/x-pdf"),
    _family(
        "office",
        "docx xlsx",
        "docx xlsx",
        f"{_OFFICE}.wordprocessingml.document {_OFFICE}.spreadsheetml.sheet application/zip",
    ),
    _family("doc", "doc", "doc", "application/msword"),
    _family(
        "text",
        "csv txt md html json jsonl",
        "csv txt text md markdown html htm json jsonl ndjson",
        "application/json application/jsonl application/x-ndjson application/x-jsonlines "
        "application/xhtml+xml application/csv",  # and every text/* type
    ),
    _family("png", "png", "png", "image/png"),
    _family("jpg", "jpg", "jpg jpeg jpe jfif", "image/jpeg image/jpg image/pjpeg"),
    _family("gif", "gif", "gif", "image/gif"),
    _family("webp", "webp", "webp", "image/webp"),
    _family("tiff", "tiff", "tif tiff", "image/tiff"),
    _family("bmp", "bmp", "bmp dib", "image/bmp image/x-bmp image/x-ms-bmp"),
    _family(
        "mp3",
        "mp3 mpeg",
        "mp3 mpga mpeg mpg",
        "audio/mpeg audio/mp3 audio/mpeg3 audio/x-mpeg audio/x-mp3 audio/mpga video/mpeg",
    ),
    _family("mp4", "mp4 m4a", "mp4 m4a m4b", "audio/mp4 audio/x-m4a audio/m4a video/mp4"),
    _family(
        "wav", "wav", "wav wave", "audio/wav audio/x-wav audio/wave audio/vnd.wave audio/x-pn-wav"
    ),
    _family("webm", "webm", "webm", "audio/webm video/webm"),
    _family("flac", "flac", "flac", "audio/flac audio/x-flac"),
    _family("ogg", "ogg", "ogg oga opus", "audio/ogg application/ogg audio/opus audio/x-ogg"),
    _family("aac", "aac", "aac", "audio/aac audio/x-aac audio/aacp"),
)
_BY_FORMAT = {fmt: family for family in FAMILIES for fmt in family.formats}
_BY_EXTENSION = {ext: family for family in FAMILIES for ext in family.extensions}
_BY_MEDIA_TYPE = {kind: family for family in FAMILIES for kind in family.media_types}


def family_of_media_type(content_type: str | None) -> Family | None:
    """The family a part's Content-Type declares (parameters ignored), if it declares one."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if not kind or kind in GENERIC_MEDIA_TYPES:
        return None
    if kind.startswith("text/"):
        return _BY_MEDIA_TYPE.get(kind) or _BY_EXTENSION["txt"]
    return _BY_MEDIA_TYPE.get(kind)


def family_of_name(filename: str) -> Family | None:
    _, dot, ext = filename.rpartition(".")
    return _BY_EXTENSION.get(ext.lower()) if dot else None


def check(detected: str, filename: str | None, content_type: str | None) -> None:
    """Raise the 400 `file_type_mismatch` when the file name or the Content-Type declares
    another family of formats than `detected`, the format the bytes were found to be."""
    actual = _BY_FORMAT.get(detected)
    if actual is None:
        return
    said = (
        (family_of_name(filename or ""), f"the name '{filename}'"),
        (family_of_media_type(content_type), f"Content-Type {content_type}"),
    )
    lies = [(family, how) for family, how in said if family is not None and family != actual]
    if lies:
        raise _mismatch(detected, lies[0][0], " and ".join(how for _, how in lies))


def _mismatch(detected: str, declared: Family, declarations: str) -> ApiError:
    return ApiError(
        400,
        "file_type_mismatch",
        f"The file's bytes are {detected}, but it was sent as {declared.name} ({declarations}); "
        "an upload's type is judged by its bytes: send it with a name and type that match.",
        param="file",
        detected_type=detected,
        declared_type=declared.name,
    )
