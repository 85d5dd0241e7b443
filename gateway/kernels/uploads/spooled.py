"""Multipart audio uploads, streamed to a spool: never held whole in memory while read.

The body is read chunk by chunk from the server and pushed through the one multipart
reader every family shares (`gateway.platform.multipart`), so a body cut before its
closing boundary is the same 400 as on files, OCR and data documents, and nothing is
transcribed. Text fields are kept (each at most `MAX_FIELD_BYTES`); the file part goes to
a `SpooledTemporaryFile` (memory up to `SPOOL_MEMORY_BYTES`, then a temporary file). The
moment the file passes `MAX_AUDIO_BYTES` the upload is refused with 413, before the rest
is read. The file's container is then checked by its bytes, never its name: a PNG called
`a.wav`, a WAV sent as `audio/mpeg`, an empty file or a truncated one is a 400.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterable
from typing import IO

import attrs
from python_multipart.multipart import parse_options_header
from werkzeug.exceptions import RequestEntityTooLarge

from gateway.kernels import declared_types as declared
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.multipart import Event, MultipartEvents, PartData, PartStart
from providers.audio_codec import sniff_container
from providers.clip_source import BytesSource, ClipSource, FileSource

MAX_AUDIO_BYTES = 25 * 1024 * 1024  # the spec's 25 MB for transcription audio
MAX_FIELD_BYTES = 64 * 1024
# A diarizing model's reference clip of a speaker's voice (2-10 s of audio as a data URL:
# 10 s of 16-bit 48 kHz mono WAV is 1.3 MB of base64) is the one text field this long.
LONG_FIELDS = {"known_speaker_references[]": 2 * 1024 * 1024}
MAX_FIELDS = 64
SPOOL_MEMORY_BYTES = 256 * 1024
HEAD_BYTES = 64  # what container sniffing reads


@attrs.define
class Upload:
    """The text fields of a multipart body and its one file, spooled."""

    fields: dict[str, list[str]] = attrs.field(factory=dict)
    file: IO[bytes] | None = None
    filename: str = ""
    content_type: str | None = None  # the file part's own, as declared
    size: int = 0
    # The file came as a text part (no filename): a pipeline's base64 `audio` field.
    as_text: bool = False

    def model(self) -> str | None:
        """The model the form names (its first `model` field), if any."""
        named = self.fields.get("model")
        return named[0] if named else None

    def head(self) -> bytes:
        assert self.file is not None
        self.file.seek(0)
        data: bytes = self.file.read(HEAD_BYTES)
        self.file.seek(0)
        return data

    def read_all(self) -> bytes:
        """The file's bytes (blocking: call from a worker thread for large files)."""
        assert self.file is not None
        self.file.seek(0)
        data: bytes = self.file.read()
        return data

    def source(self) -> ClipSource:
        """The file as a clip source that reads the spool in place (blocking: call from
        a worker thread). Valid until `close`. A file still in the spool's memory (at
        most `SPOOL_MEMORY_BYTES`) is copied out; a larger one was rolled over to disk
        and is read there by position, never copied whole."""
        assert self.file is not None
        if self.size <= SPOOL_MEMORY_BYTES:
            self.file.seek(0)
            return BytesSource(self.file.read())
        self.file.flush()
        return FileSource(self.file.fileno(), self.size)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def too_large() -> ApiError:
    return ApiError(
        413,
        "file_too_large",
        f"The audio file is over {MAX_AUDIO_BYTES // (1024 * 1024)} MB.",
        param="file",
    )


def boundary_of(content_type: str | None, field: str = "file") -> bytes:
    """The multipart boundary; a body of another kind is a 400 naming the missing file
    (the spec's audio status tables have no 415: the request lacks its required file)."""
    kind, options = parse_options_header(content_type or "")
    if kind != b"multipart/form-data" or not options.get(b"boundary"):
        raise invalid_request(
            f"Send the audio as multipart/form-data with a '{field}' file field.", param=field
        )
    boundary: bytes = options[b"boundary"]
    return boundary


class _Collector:
    """Fills an `Upload` from the multipart reader's events as bytes arrive."""

    def __init__(self, upload: Upload, field: str = "file", *, text_file: bool = False) -> None:
        self.upload = upload
        self._field = field
        self._text_file = text_file  # a text part named `field` is spooled as the file too
        self._part: PartStart | None = None
        self._in_file = False
        self._limit = MAX_AUDIO_BYTES
        self._value = bytearray()

    def handle(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, PartStart):
                self._start(event)
            elif isinstance(event, PartData):
                self._data(event.data)
            else:
                self._end()

    def _start(self, part: PartStart) -> None:
        self._part, self._value = part, bytearray()
        self._in_file = part.name == self._field and (part.filename is not None or self._text_file)
        if not self._in_file:
            return
        if self.upload.file is not None:
            raise invalid_request(f"Send one '{self._field}' per request.", param=self._field)
        # Closed by `Upload.close`, which the request handler calls on every path.
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)  # noqa: SIM115
        self.upload.file = spool
        self.upload.filename = part.filename or ""
        self.upload.content_type = part.content_type
        self.upload.as_text = part.filename is None
        # Base64 text of 25 MB of audio is a third longer.
        self._limit = MAX_AUDIO_BYTES * 4 // 3 + 4 if self.upload.as_text else MAX_AUDIO_BYTES

    def _data(self, data: bytes) -> None:
        if self._in_file:
            self.upload.size += len(data)
            if self.upload.size > self._limit:
                raise too_large()
            assert self.upload.file is not None
            self.upload.file.write(data)
            return
        self._value += data
        name = self._part.name if self._part is not None else ""
        if len(self._value) > LONG_FIELDS.get(name, MAX_FIELD_BYTES):
            raise invalid_request(f"The field '{name}' is too long.", param=name)

    def _end(self) -> None:
        part, self._part = self._part, None
        if part is None or part.filename is not None or self._in_file:
            return
        values = self.upload.fields.setdefault(part.name, [])
        if sum(len(v) for v in self.upload.fields.values()) >= MAX_FIELDS:
            raise invalid_request("Too many form fields.")
        values.append(self._value.decode("utf-8", "replace"))


async def read_upload(
    chunks: AsyncIterable[bytes],
    content_type: str | None,
    *,
    field: str = "file",
    text_file: bool = False,
) -> Upload:
    """Parse a multipart body as it arrives; raises 413 the moment the file (the part
    named `field`; with `text_file` also a text part of that name, `as_text`) is too
    large, 400 for a malformed body, a missing file or another content type. The caller
    closes the returned upload. Cancellation leaves nothing behind but the spool, which
    is closed here."""
    boundary = boundary_of(content_type, field)
    upload = Upload()
    collector = _Collector(upload, field, text_file=text_file)
    parser = MultipartEvents(boundary)
    try:
        async for chunk in chunks:
            collector.handle(parser.feed(chunk))
        parser.finish()
    except RequestEntityTooLarge:  # the server's own bound on the whole body
        upload.close()
        raise too_large() from None
    except BaseException:
        upload.close()
        raise
    if upload.file is None or upload.size == 0:
        upload.close()
        raise invalid_request(f"'{field}' is required and must not be empty.", param=field)
    try:
        _check_declared(upload)
    except BaseException:
        upload.close()
        raise
    return upload


def _check_declared(upload: Upload) -> None:
    """Audio whose name or Content-Type declares another format than its bytes' is a 400
    (`gateway.kernels.declared_types`); bytes that are no audio at all are left to the audio
    check, whose 400 says so (`invalid_audio`)."""
    if upload.as_text:
        return
    detected = sniff_container(upload.head())
    if detected is not None:
        declared.check(detected, upload.filename, upload.content_type)
