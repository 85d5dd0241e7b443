"""A streaming multipart/form-data reader: body chunks in, part events out, nothing buffered.

`python-multipart`'s parser reports parts through synchronous callbacks; `MultipartEvents`
turns each `feed(chunk)` into a list of events (a part's headers, a slice of its data, its
end) that an async caller handles one by one, so a file part can go to disk at the pace
the body arrives and a form never sits whole in memory. Shared by every multipart endpoint
(files, OCR, data documents, audio transcriptions and translations, pipelines).
"""

from __future__ import annotations

from email.message import Message

import attrs
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from gateway.platform.errors import invalid_request


@attrs.frozen
class PartStart:
    name: str
    filename: str | None
    content_type: str | None = None  # the part's own Content-Type, as declared


@attrs.frozen
class PartData:
    data: bytes


@attrs.frozen
class PartEnd:
    pass


Event = PartStart | PartData | PartEnd


def boundary_of(content_type: str | None) -> bytes:
    """The boundary of a multipart/form-data body; 400 for any other body."""
    kind, options = parse_options_header(content_type or "")
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise invalid_request("The request body must be multipart/form-data.")
    return boundary


@attrs.define(eq=False)
class MultipartEvents:
    boundary: bytes
    _events: list[Event] = attrs.field(factory=list)
    _headers: list[tuple[bytes, bytes]] = attrs.field(factory=list)
    _field: bytearray = attrs.field(factory=bytearray)
    _value: bytearray = attrs.field(factory=bytearray)
    _parser: MultipartParser = attrs.field(init=False)
    ended: bool = False

    def __attrs_post_init__(self) -> None:
        self._parser = MultipartParser(
            self.boundary,
            {
                "on_header_field": lambda d, s, e: self._field.extend(d[s:e]),
                "on_header_value": lambda d, s, e: self._value.extend(d[s:e]),
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": lambda d, s, e: self._events.append(PartData(bytes(d[s:e]))),
                "on_part_end": lambda: self._events.append(PartEnd()),
                "on_end": self._end,
            },
        )

    def feed(self, chunk: bytes) -> list[Event]:
        """Parse one chunk of the body; the events it completed, in order. 400 when the
        body is not valid multipart."""
        try:
            self._parser.write(chunk)
        except MultipartParseError as exc:
            raise invalid_request(f"The multipart body is malformed: {exc}") from None
        events, self._events = self._events, []
        return events

    def finish(self) -> None:
        """The body is over: 400 unless its closing boundary was read (a client that
        stopped early sent a form that may lack parts or end mid-file)."""
        if not self.ended:
            raise invalid_request("The multipart body ended early.")

    def _header_end(self) -> None:
        self._headers.append((bytes(self._field).lower(), bytes(self._value)))
        self._field.clear()
        self._value.clear()

    def _headers_finished(self) -> None:
        headers, self._headers = dict(self._headers), []
        disposition = headers.get(b"content-disposition", b"").decode("utf-8", "replace")
        message = Message()
        message["content-disposition"] = disposition
        name = message.get_param("name", header="content-disposition")
        filename = message.get_filename()
        if not isinstance(name, str):
            raise invalid_request("A multipart part has no field name.")
        declared = headers.get(b"content-type")
        content_type = (
            declared.decode("latin-1").split(";")[0].strip().lower() if declared else None
        )
        self._events.append(PartStart(name, filename, content_type or None))

    def _end(self) -> None:
        self.ended = True
