"""What every multipart upload route starts with (files, data documents, OCR): the caller,
who must hold `files`, and the request's body as streamed chunks with its boundary (a
missing or malformed boundary is the 400 of `boundary_of`, before any byte is read)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import cast

import attrs
from quart import request

from gateway.platform.auth import Principal
from gateway.platform.callers import Authenticator
from gateway.platform.errors import ApiError
from gateway.platform.multipart import boundary_of


@attrs.frozen
class Upload:
    principal: Principal
    chunks: AsyncIterator[bytes]
    boundary: bytes
    headers: Mapping[str, str]


async def upload_request(auth: Authenticator, *, media_type_status: int = 400) -> Upload:
    """`media_type_status` 415 answers a body that is not multipart at all with 415
    `unsupported_media_type` (the spec's file-upload row has it; the OCR and data-document
    rows do not, so they keep the 400)."""
    principal = await auth.caller()
    principal.require("files")
    content_type = request.headers.get("content-type")
    if media_type_status == 415 and not _multipart(content_type):
        raise ApiError(
            415,
            "unsupported_media_type",
            "Send the file as multipart/form-data with 'file' and 'purpose' fields.",
        )
    boundary = boundary_of(content_type)
    headers = cast(Mapping[str, str], request.headers)
    return Upload(principal, aiter(request.body), boundary, headers)


def _multipart(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "multipart/form-data"
