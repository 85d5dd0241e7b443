"""What every multipart upload route starts with (files, data documents, OCR): the caller,
who must hold `files`, and the request's body as streamed chunks with its boundary (a
missing or malformed boundary is the 400 of `boundary_of`, before any byte is read)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import cast

import attrs
from quart import request

from gateway.platform.auth import Principal
from gateway.platform.multipart import boundary_of
from gateway.platform.state import AppState
from gateway.platform.web import authenticate


@attrs.frozen
class Upload:
    principal: Principal
    chunks: AsyncIterator[bytes]
    boundary: bytes
    headers: Mapping[str, str]


async def upload_request(state: AppState) -> Upload:
    principal = await authenticate(state)
    principal.require("files")
    boundary = boundary_of(request.headers.get("content-type"))
    headers = cast(Mapping[str, str], request.headers)
    return Upload(principal, aiter(request.body), boundary, headers)
