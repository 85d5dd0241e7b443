"""HTTP plumbing shared by the adapters: JSON calls and SSE streams over one httpx client.

Adapters subclass `HttpProvider`, say how to authenticate (`auth_headers`) and how to read
their vendor's error bodies (`map_error`); this module turns transport failures into the
`providers.errors` hierarchy, the way httpx's default transport maps httpcore errors.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from providers.base import Provider, ProviderEndpoint
from providers.errors import (
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from streams.sse import SSEDecoder, SSEEvent


def read_json(body: bytes) -> Any:
    """Parse a body that should be JSON; `None` when it is not."""
    try:
        return json.loads(body)
    except ValueError:
        return None


class HttpProvider(Provider):
    """An adapter that talks HTTP to `endpoint.base_url` through a shared client."""

    def __init__(self, client: httpx.AsyncClient, endpoint: ProviderEndpoint) -> None:
        self.client = client
        self.endpoint = endpoint
        self.provider_id = endpoint.provider_id
        self._base = endpoint.base_url.rstrip("/")
        self._headers = {"content-type": "application/json", **self.auth_headers()}

    def auth_headers(self) -> dict[str, str]:
        """Headers that authenticate us to the vendor."""
        return {"authorization": f"Bearer {self.endpoint.api_key}"}

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        """Turn a vendor's error answer about `model` into our hierarchy; adapters refine this."""
        return UpstreamHTTPError(
            self.provider_id, f"upstream answered HTTP {status}", status=status
        )

    def url(self, path: str) -> str:
        return self._base + path

    async def post_json(self, path: str, payload: Mapping[str, Any], *, model: str = "") -> Any:
        """POST `payload` and return the decoded JSON answer; errors are mapped."""
        try:
            response = await self.client.post(
                self.url(path), content=json.dumps(payload), headers=self._headers
            )
        except httpx.HTTPError as exc:
            raise self.transport_error(exc) from exc
        return self.checked_json(response, model)

    async def get_json(self, path: str) -> Any:
        try:
            response = await self.client.get(self.url(path), headers=self._headers)
        except httpx.HTTPError as exc:
            raise self.transport_error(exc) from exc
        return self.checked_json(response, "")

    def checked_json(self, response: httpx.Response, model: str) -> Any:
        if response.status_code >= 400:
            raise self.map_error(response.status_code, response.content, response.headers, model)
        data = read_json(response.content)
        if data is None:
            raise UpstreamHTTPError(
                self.provider_id, "upstream answered with a body that is not JSON", status=502
            )
        return data

    @asynccontextmanager
    async def open_stream(
        self, path: str, payload: Mapping[str, Any], *, model: str = ""
    ) -> AsyncIterator[httpx.Response]:
        """POST and hold the streamed response open; an error status is mapped at once.

        The response is closed when the context exits, by any path.
        """
        request = self.client.build_request(
            "POST", self.url(path), content=json.dumps(payload), headers=self._headers
        )
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self.transport_error(exc) from exc
        try:
            if response.status_code >= 400:
                body = await self._read_error_body(response)
                raise self.map_error(response.status_code, body, response.headers, model)
            yield response
        finally:
            await response.aclose()

    async def _read_error_body(self, response: httpx.Response) -> bytes:
        try:
            return await response.aread()
        except httpx.HTTPError:
            return b""

    async def sse_events(self, response: httpx.Response) -> AsyncGenerator[SSEEvent, None]:
        """The SSE events of a streamed response; a broken transfer is `StreamInterrupted`.

        Consume it under `contextlib.aclosing`, and to its end where possible: httpx's
        own byte iterators are nested async generators that only an exhausted read (or
        the garbage collector, after `response.aclose()` has closed the connection)
        finalises.
        """
        decoder = SSEDecoder()
        try:
            async for chunk in response.aiter_bytes():
                for event in decoder.feed(chunk):
                    yield event
        except httpx.HTTPError as exc:
            raise StreamInterrupted(
                self.provider_id, f"the upstream stream broke: {type(exc).__name__}"
            ) from exc

    def transport_error(self, exc: httpx.HTTPError) -> ProviderError:
        """Map an httpx failure that happened before any answer."""
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamTimeout(
                self.provider_id, "the upstream did not answer in time", timeout_ms=0
            )
        if isinstance(exc, httpx.RemoteProtocolError):
            return StreamInterrupted(
                self.provider_id, "the upstream closed the connection before answering"
            )
        return UpstreamUnavailable(
            self.provider_id, f"could not reach the upstream: {type(exc).__name__}"
        )
