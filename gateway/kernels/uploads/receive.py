"""Receiving an upload: a multipart body streamed into the blob store, limits enforced on the way.

The body is read chunk by chunk; the file part goes to a temporary blob as it arrives, so
memory holds one chunk at a time whatever the upload's size. Every limit is checked as soon
as it can be known: the purpose's when the `purpose` field arrives (it may come before or
after the file), the type's once the first bytes have told the type (a type the file's name or
Content-Type contradicts is a 400, `gateway.kernels.declared_types`), the workspace quota
throughout. The first one crossed answers 413 (507 for the quota) without reading further.
On any failure, cancellation included, the temporary blob is removed: nothing is left behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager

import attrs
import trio

from gateway.kernels import declared_types as declared_type
from gateway.kernels.uploads import formats
from gateway.kernels.uploads.formats import SNIFF_BYTES, Kind
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.multipart import Event, MultipartEvents, PartData, PartEnd, PartStart
from store.blobs import BlobStore, BlobWriter

MAX_FIELD_BYTES = 64 * 1024
MAX_FIELDS = 64


@attrs.frozen
class Received:
    """A complete upload on disk (still under its temporary name until committed)."""

    fields: Mapping[str, str]
    filename: str
    kind: Kind
    writer: BlobWriter


def too_large(limit: int, what: str) -> ApiError:
    return ApiError(
        413,
        "file_too_large",
        f"The upload exceeds the {limit // formats.MB} MB limit for {what}.",
        limit_bytes=limit,
    )


def quota_exceeded(quota: int) -> ApiError:
    return ApiError(
        507,
        "storage_quota_exceeded",
        f"The workspace's storage quota of {quota} bytes would be exceeded.",
        type="storage_error",
        quota_bytes=quota,
    )


@attrs.define(eq=False)
class _Receiver:
    """The state of one upload being read; see `receive`."""

    blobs: BlobStore
    quota_left: int
    quota: int
    file_field: str
    allowed_purposes: Mapping[str, int] | None
    fields: dict[str, str] = attrs.field(factory=dict)
    part: PartStart | None = None
    value: bytearray = attrs.field(factory=bytearray)
    writer: BlobWriter | None = None
    filename: str | None = None
    file_part: PartStart | None = None
    head: bytearray = attrs.field(factory=bytearray)
    kind: Kind | None = None
    pending: list[bytes] = attrs.field(factory=list)

    async def handle(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, PartStart):
                self._start(event)
            elif isinstance(event, PartData):
                self._data(event.data)
            elif isinstance(event, PartEnd):
                await self._end()
        await self._flush()

    def _start(self, part: PartStart) -> None:
        self.part = part
        if part.name == self.file_field:
            if self.writer is not None:
                raise invalid_request(f"Only one '{self.file_field}' part is accepted.")
            self.filename = part.filename or "upload"
            self.file_part = part
            self.writer = self.blobs.open_writer()
        elif len(self.fields) >= MAX_FIELDS:
            raise invalid_request("Too many form fields.")

    def _data(self, data: bytes) -> None:
        if self.part is None or self.part.name != self.file_field:
            self.value.extend(data)
            if len(self.value) > MAX_FIELD_BYTES:
                raise invalid_request("A form field is longer than 64 KiB.")
            return
        assert self.writer is not None
        self.pending.append(data)
        self._check_size(self.writer.size + sum(map(len, self.pending)))
        if self.kind is None and len(self.head) < SNIFF_BYTES:
            self.head.extend(data[: SNIFF_BYTES - len(self.head)])
            if len(self.head) >= SNIFF_BYTES:
                self._sniff()

    async def _end(self) -> None:
        part, self.part = self.part, None
        if part is None:
            return
        if part.name == self.file_field:
            if self.kind is None and self.head:
                self._sniff()
            return
        self._keep(part.name, self.value.decode("utf-8", "replace"))
        self.value.clear()
        if part.name == "purpose":
            self._check_purpose()
        if self.writer is not None:
            self._check_size(self.writer.size + sum(map(len, self.pending)))

    def _keep(self, name: str, value: str) -> None:
        """A list field arrives as repeated parts (`language_hints=en`, `language_hints=de`)
        or as `name[]` parts (the `openai` client's spelling): its values are kept joined by
        commas under the plain name, as a comma-separated list field reads them."""
        name = name.removesuffix("[]") or name
        previous = self.fields.get(name)
        self.fields[name] = value if previous is None else f"{previous},{value}"

    def _sniff(self) -> None:
        declared = self.file_part.content_type if self.file_part is not None else None
        self.kind = formats.sniff(bytes(self.head), self.filename or "", declared)
        if self.kind is None:
            raise ApiError(
                415,
                "unsupported_file_type",
                "The file's content is not a supported type.",
                type="invalid_request_error",
            )
        declared_type.check(self.kind.name, self.filename, declared)

    def _check_purpose(self) -> None:
        purpose = self.fields["purpose"]
        limits = self.allowed_purposes or formats.PURPOSE_LIMITS
        if purpose not in limits:
            raise invalid_request(
                f"'purpose' must be one of {', '.join(limits)}.", param="purpose", value=purpose
            )

    def _check_size(self, size: int) -> None:
        if size > self.quota_left:
            raise quota_exceeded(self.quota)
        purpose = self.fields.get("purpose")
        limits = self.allowed_purposes or formats.PURPOSE_LIMITS
        if purpose is not None and purpose in limits and size > limits[purpose]:
            raise too_large(limits[purpose], f"purpose '{purpose}'")
        if self.kind is not None and size > self.kind.limit:
            raise too_large(self.kind.limit, f"{self.kind.name} files")
        if size > formats.LARGEST_UPLOAD:
            raise too_large(formats.LARGEST_UPLOAD, "any upload")

    async def _flush(self) -> None:
        if not self.pending or self.writer is None:
            return
        data, self.pending = b"".join(self.pending), []
        await trio.to_thread.run_sync(self.writer.write, data)


@contextmanager
def upload_deadline(timeout_s: float) -> Iterator[None]:
    """The block must receive the upload within `timeout_s`; a client that sends too
    slowly gets 408, as a late body does on every other route (not the 500 a bare
    `TooSlowError` would become)."""
    try:
        with trio.fail_after(timeout_s):
            yield
    except trio.TooSlowError:
        raise ApiError(
            408,
            "request_timeout",
            f"The upload did not arrive within {timeout_s:g} s.",
            type="invalid_request_error",
        ) from None


async def receive(
    chunks: AsyncIterator[bytes],
    boundary: bytes,
    blobs: BlobStore,
    *,
    quota_left: int,
    quota: int,
    file_field: str = "file",
    kinds: Mapping[str, int] | None = None,
    purposes: Mapping[str, int] | None = None,
) -> Received:
    """Read the whole body; the upload on disk under a temporary name (flushed, so it can be
    read by its path), or an ApiError.

    `kinds` restricts the accepted types (name -> limit, for OCR); `purposes` replaces the
    purpose table. On any exception, cancellation included, the temporary blob is removed
    before the exception propagates.
    """
    receiver = _Receiver(blobs, quota_left, quota, file_field, purposes)
    parser = MultipartEvents(boundary)
    try:
        async for chunk in chunks:
            await receiver.handle(parser.feed(chunk))
        received = _finish(receiver, parser, kinds)
        await trio.to_thread.run_sync(received.writer.handle.flush)  # readable by path now
        return received
    except BaseException:
        if receiver.writer is not None:
            blobs.discard(receiver.writer)
        raise


def _finish(
    receiver: _Receiver, parser: MultipartEvents, kinds: Mapping[str, int] | None
) -> Received:
    parser.finish()
    writer = receiver.writer
    if writer is None or receiver.filename is None:
        raise invalid_request(f"'{receiver.file_field}' is required.", param=receiver.file_field)
    if writer.size == 0:
        raise invalid_request("The file is empty.", param=receiver.file_field)
    assert receiver.kind is not None  # a non-empty file part was sniffed at its end
    if kinds is not None:
        if receiver.kind.name not in kinds:
            raise ApiError(
                415, "unsupported_file_type", f"{receiver.kind.name} files are not accepted here."
            )
        if writer.size > kinds[receiver.kind.name]:
            raise too_large(kinds[receiver.kind.name], f"{receiver.kind.name} files")
    return Received(receiver.fields, receiver.filename, receiver.kind, writer)
