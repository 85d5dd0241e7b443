"""multipart/form-data request bodies, as vendors' transcription endpoints take them. Pure.

`form_body` builds a whole body in memory (small clips, vendors whose adapters want
bytes); `form_stream` frames a clip that stays where it is (an upload's spool file) and
is read piece by piece as it is sent, with its exact length known up front.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing

import attrs

from providers.clip_source import ClipSource


def form_body(
    fields: Iterable[tuple[str, str]], file_field: str, filename: str, mime: str, data: bytes
) -> tuple[bytes, str]:
    """The body and its Content-Type for text `fields` plus one file part."""
    boundary = _boundary()
    head = _head(boundary, fields, file_field, filename, mime)
    return head + data + _tail(boundary), _content_type(boundary)


def form_stream(
    fields: Iterable[tuple[str, str]],
    file_field: str,
    filename: str,
    mime: str,
    source: ClipSource,
) -> tuple[FormStream, str]:
    """The same body as `form_body`'s, as a `providers.upstream.StreamedBody` whose file
    part is read from `source` while it is sent; and its Content-Type."""
    boundary = _boundary()
    head = _head(boundary, fields, file_field, filename, mime)
    return FormStream(head, source, _tail(boundary)), _content_type(boundary)


@attrs.frozen(slots=True)
class FormStream:
    """A multipart body: framing in memory, the file part read from its source.

    Each `pieces()` starts from the beginning (a retry or a second candidate sends the
    whole body again); at most one piece of the file is held at a time.
    """

    head: bytes = attrs.field(repr=False)
    source: ClipSource = attrs.field(repr=False)
    tail: bytes = attrs.field(repr=False)

    @property
    def length(self) -> int:
        return len(self.head) + self.source.size + len(self.tail)

    async def pieces(self) -> AsyncGenerator[bytes, None]:
        yield self.head
        async with aclosing(self.source.pieces()) as file_pieces:
            async for piece in file_pieces:
                yield piece
        yield self.tail


def _boundary() -> str:
    return "gw" + os.urandom(12).hex()


def _content_type(boundary: str) -> str:
    return f"multipart/form-data; boundary={boundary}"


def _head(
    boundary: str, fields: Iterable[tuple[str, str]], file_field: str, filename: str, mime: str
) -> bytes:
    """Everything before the file's bytes: the text fields and the file part's headers."""
    parts: list[bytes] = []
    for name, value in fields:
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value.encode()
            + b"\r\n"
        )
    safe_name = filename.replace('"', "_").replace("\r", "_").replace("\n", "_")
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
        f'filename="{safe_name}"\r\nContent-Type: {mime}\r\n\r\n'.encode()
    )
    return b"".join(parts)


def _tail(boundary: str) -> bytes:
    return f"\r\n--{boundary}--\r\n".encode()
