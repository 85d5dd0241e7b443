"""`HttpxUpstream`: the upstream interface over an `httpx.AsyncClient`.

For what `LeanUpstream` does not speak: HTTP/2 upstreams, proxies, compressed answers.
httpx's failures are mapped to `providers.upstream.errors` as its own default
transport maps httpcore's (`raise Mapped(...) from exc`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import TracebackType

import httpx

from providers.upstream.base import RequestBody, UpstreamResponse
from providers.upstream.errors import (
    ConnectError,
    ConnectTimeout,
    ProtocolError,
    ReadError,
    Timeout,
    UpstreamError,
    WriteError,
)

_MAPPING: tuple[tuple[type[httpx.HTTPError], type[UpstreamError]], ...] = (
    (httpx.ConnectTimeout, ConnectTimeout),
    (httpx.TimeoutException, Timeout),
    (httpx.ConnectError, ConnectError),
    (httpx.WriteError, WriteError),
    (httpx.ReadError, ReadError),
    (httpx.RemoteProtocolError, ProtocolError),
)


def map_httpx_error(exc: httpx.HTTPError) -> UpstreamError:
    """The upstream error class for an httpx failure; unlisted ones stay generic."""
    for source, target in _MAPPING:
        if isinstance(exc, source):
            return target(f"{type(exc).__name__}: {exc}")
    return UpstreamError(f"{type(exc).__name__}: {exc}")


class HttpxUpstream:
    """The `Upstream` interface over one shared `httpx.AsyncClient`, which it owns."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> UpstreamResponse:
        headers, content = _content(headers, body)
        try:
            response = await self.client.request(method, url, headers=headers, content=content)
        except httpx.HTTPError as exc:
            raise map_httpx_error(exc) from exc
        return UpstreamResponse(response.status_code, dict(response.headers), response.content)

    def stream(
        self, method: str, url: str, headers: Mapping[str, str], body: RequestBody = b""
    ) -> HttpxStreamContext:
        headers, content = _content(headers, body)
        request = self.client.build_request(method, url, headers=headers, content=content)
        return HttpxStreamContext(self.client, request)

    async def aclose(self) -> None:
        await self.client.aclose()


def _content(
    headers: Mapping[str, str], body: RequestBody
) -> tuple[Mapping[str, str], bytes | AsyncIterator[bytes]]:
    """httpx's `content` for `body`: a streamed body's pieces, with its length declared
    (httpx then sends it as is, not chunked)."""
    if isinstance(body, bytes):
        return headers, body
    return {**headers, "content-length": str(body.length)}, body.pieces()


class HttpxStream:
    """An httpx streamed response as an `UpstreamStream`."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.status = response.status_code
        self.headers: Mapping[str, str] = dict(response.headers)
        self._pieces: AsyncIterator[bytes] = response.aiter_bytes()

    def __aiter__(self) -> HttpxStream:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await anext(self._pieces)
        except httpx.HTTPError as exc:
            raise map_httpx_error(exc) from exc

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self])

    async def aclose(self) -> None:
        """Close httpx's outer byte iterator, then the response (and its connection)."""
        aclose = getattr(self._pieces, "aclose", None)  # typed as an iterator, made a generator
        try:
            if aclose is not None:
                await aclose()
        finally:
            await self.response.aclose()


class HttpxStreamContext:
    """What `HttpxUpstream.stream` returns: sends on entry, closes the response on exit."""

    def __init__(self, client: httpx.AsyncClient, request: httpx.Request) -> None:
        self._client = client
        self._request = request
        self._stream: HttpxStream | None = None

    async def __aenter__(self) -> HttpxStream:
        try:
            response = await self._client.send(self._request, stream=True)
        except httpx.HTTPError as exc:
            raise map_httpx_error(exc) from exc
        self._stream = HttpxStream(response)
        return self._stream

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._stream is not None:
            await self._stream.aclose()
