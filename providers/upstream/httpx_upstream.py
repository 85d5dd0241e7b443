"""`HttpxUpstream`: the upstream interface over an `httpx.AsyncClient`.

For what `LeanUpstream` does not speak: HTTP/2 upstreams, proxies, compressed answers.
httpx's failures are mapped to `providers.upstream.errors` as its own default
transport maps httpcore's (`raise Mapped(...) from exc`). Its connections pass the same
address policy as the lean client's (`guarded_transport`), and it follows no redirect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from types import TracebackType

import httpcore
import httpx
import trio
from httpcore import SOCKET_OPTION

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
from providers.upstream.guard import AddressPolicy
from providers.upstream.traced import with_trace
from providers.upstream.transport import open_tcp

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
    """The `Upstream` interface over one shared `httpx.AsyncClient`, which it owns.

    `address_policy` is the policy the client's own connections were built with
    (`guarded_transport`); `open_tcp` applies it to a WebSocket adapter's connections.
    """

    def __init__(
        self, client: httpx.AsyncClient, address_policy: AddressPolicy | None = None
    ) -> None:
        self.client = client
        self._policy = address_policy

    async def open_tcp(self, host: str, port: int) -> trio.SocketStream:
        """See `Upstream.open_tcp`."""
        return await open_tcp(host, port, self._policy)

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


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, refusing a connection whose address `policy` does not
    allow (`httpcore.ConnectError`, which httpx maps to `ConnectError`), checked on the
    address reached before a byte is sent, as the lean client does."""

    def __init__(self, policy: AddressPolicy, inner: httpcore.AsyncNetworkBackend) -> None:
        self._policy = policy
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        address = str(stream.get_extra_info("server_addr")[0])
        reason = self._policy.refusal(host, address)
        if reason is not None:
            await stream.aclose()
            raise httpcore.ConnectError(f"{host} resolves to a {reason} address, refused")
        return stream

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("Unix sockets are not upstreams")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport(
    policy: AddressPolicy, limits: httpx.Limits, *, http2: bool = False
) -> httpx.AsyncHTTPTransport:
    """httpx's transport whose every new connection goes through `GuardedNetworkBackend`.
    httpx takes no network backend of its own, so its pool's is wrapped in place (httpcore
    1.x's `AsyncConnectionPool._network_backend`, read at each new connection;
    tests/providers/test_upstream_guard.py proves it still is)."""
    transport = httpx.AsyncHTTPTransport(limits=limits, http2=http2, trust_env=False)
    pool = transport._pool
    pool._network_backend = GuardedNetworkBackend(policy, pool._network_backend)
    return transport


def _content(
    headers: Mapping[str, str], body: RequestBody
) -> tuple[Mapping[str, str], bytes | AsyncIterator[bytes]]:
    """httpx's headers (this task's trace headers added, `traced`) and `content` for
    `body`: a streamed body's pieces, with its length declared (httpx then sends it as
    is, not chunked)."""
    headers = with_trace(headers)
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

    @property
    def complete(self) -> bool:
        return False  # httpx does not say whether the rest is buffered

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
