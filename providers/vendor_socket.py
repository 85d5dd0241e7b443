"""A vendor's WebSocket opened by an HTTP adapter: the same address policy as its HTTP
calls, and a refused or unreachable handshake mapped into our hierarchy.

ElevenLabs' speech input, OpenAI's Realtime API and Mistral's realtime transcription are
WebSockets beside an HTTP API. Their handshake goes through the adapter's upstream
client's `open_tcp` (the address guard of `providers.upstream.guard` sees every
connection before a byte is sent); a handshake the vendor answers with HTTP is mapped as
that HTTP answer would be (`map_error`), an unreachable host is `UpstreamUnavailable`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import attrs
import orjson
from trio_websocket import ConnectionClosed, ConnectionRejected, WebSocketConnection

from providers.errors import ProviderError, StreamInterrupted, UpstreamUnavailable
from providers.http import HttpProvider
from providers.websocket_client import open_socket


def socket_url(base_url: str, path: str, query: Mapping[str, str]) -> str:
    """`path` under an HTTP base URL, its scheme made ws/wss, with `query`."""
    parts = urlsplit(base_url.rstrip("/"))
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, parts.path + path, urlencode(query), ""))


class VendorSockets(HttpProvider):
    """Opens the vendor's WebSockets (mixed into the adapters that speak one)."""

    @asynccontextmanager
    async def vendor_socket(
        self,
        url: str,
        headers: list[tuple[bytes, bytes]],
        *,
        model: str,
        max_message_size: int,
    ) -> AsyncIterator[WebSocketConnection]:
        """A connected socket for the block. Before it is open, a refusal is the mapped
        `ProviderError` (an address the policy refuses is an unreachable host); once
        open, what the block raises comes out as it is. Leaving closes the socket on
        every path (at once on cancellation)."""
        opened = False
        try:
            async with open_socket(
                url,
                headers,
                max_message_size=max_message_size,
                open_tcp=self.client.open_tcp,
            ) as socket:
                opened = True
                yield socket
        except ConnectionRejected as exc:
            if opened:
                raise
            raise self._rejected(exc, model) from exc
        except OSError as exc:
            if opened:
                raise
            raise UpstreamUnavailable(
                self.provider_id, f"could not open the vendor's socket: {type(exc).__name__}"
            ) from exc

    def _rejected(self, exc: ConnectionRejected, model: str) -> ProviderError:
        headers: Mapping[str, str] = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in exc.headers
        }
        return self.map_error(exc.status_code, exc.body or b"", headers, model)


class TextSocket:
    """An open vendor session of JSON text messages both ways. A closed socket is
    `StreamInterrupted`, naming the close's code and reason."""

    def __init__(self, socket: WebSocketConnection, provider_id: str) -> None:
        self._socket, self._provider = socket, provider_id

    async def send(self, message: str) -> None:
        try:
            await self._socket.send_message(message)
        except ConnectionClosed as exc:
            raise self._closed(exc) from exc

    async def receive(self) -> str:
        try:
            message = await self._socket.get_message()
        except ConnectionClosed as exc:
            raise self._closed(exc) from exc
        return message if isinstance(message, str) else message.decode()

    def _closed(self, exc: ConnectionClosed) -> StreamInterrupted:
        reason = exc.reason
        said = f" ({reason.code} {reason.reason or ''})".rstrip() if reason is not None else ""
        return StreamInterrupted(self._provider, f"the vendor's socket closed{said}")


def read_event(raw: str | bytes) -> dict[str, Any]:
    """A vendor's event as an object (one that is not a JSON object is an empty one)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


@attrs.define
class FedAudio:
    """How much PCM16 audio at `rate` a streaming recogniser was sent."""

    rate: int
    samples: int = 0

    def add(self, pcm: bytes) -> None:
        self.samples += len(pcm) // 2

    @property
    def seconds(self) -> float:
        return self.samples / self.rate
