"""What the adapters share: JSON calls and SSE streams over one upstream client, and the
answer pieces several vendors send alike (`Retry-After`, OpenAI-shaped usage and vectors).

Adapters subclass `HttpProvider`, say how to authenticate (`auth_headers`) and how to read
their vendor's error bodies (`map_error`); this module turns transport failures (the
`providers.upstream.errors` hierarchy) into the `providers.errors` hierarchy, the way
httpx's default transport maps httpcore errors.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import Any, Protocol

import attrs
import httpx
import orjson

from providers.base import Provider, ProviderEndpoint
from providers.errors import (
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.types import ChatChunk, EmbeddingResult, TokenLogprob, Usage
from providers.upstream import (
    FixedHeaders,
    HttpxUpstream,
    ProtocolError,
    RequestBody,
    Timeout,
    Upstream,
    UpstreamError,
    UpstreamResponse,
    UpstreamStream,
)
from streams.sse import SSEDecoder, SSEEvent


class EventReader(Protocol):
    """A vendor's stream read event by event (`HttpProvider.chunk_batches`): `read` gives
    an event's chunks, `end` those the stream's end gives (or raises what its end means:
    a stream cut before it finished, a failure held until the transfer ended)."""

    def read(self, event: SSEEvent) -> list[ChatChunk]: ...

    def end(self) -> list[ChatChunk]: ...


def read_json(body: bytes | str) -> Any:
    """Parse a body that should be JSON; `None` when it is not."""
    try:
        return orjson.loads(body)
    except ValueError:
        return None


# -- answer pieces several vendors share ----------------------------------------------------


def batches(texts: Sequence[str], size: int) -> list[Sequence[str]]:
    """`texts` in runs of at most `size`, for vendors that take fewer texts a call than
    the gateway accepts (Cohere 96, Gemini 100; the gateway 2048)."""
    return [texts[start : start + size] for start in range(0, len(texts), size)]


def merge_embeddings(model: str, parts: Sequence[tuple[list[list[float]], int]]) -> EmbeddingResult:
    """The answers of several batches (vectors, tokens) as one result, in input order."""
    vectors = [vector for part_vectors, _ in parts for vector in part_vectors]
    tokens = sum(part_tokens for _, part_tokens in parts)
    return EmbeddingResult(model=model, vectors=vectors, usage=Usage(prompt_tokens=tokens))


def retry_after_seconds(headers: Mapping[str, str]) -> int | None:
    value = headers.get("retry-after")
    try:
        return max(0, int(float(value))) if value is not None else None
    except ValueError:
        return None


def parse_usage(data: Mapping[str, Any] | None) -> Usage:
    """An OpenAI-style `usage` object; of its tokens, the audio ones (an audio model's
    speech heard and spoken, in `*_tokens_details.audio_tokens`) are kept apart, since
    they are priced apart. One `Usage` made, whatever the answer carries."""
    if not data:
        return Usage()
    get = data.get
    return Usage(
        int(get("prompt_tokens") or 0),
        int(get("completion_tokens") or 0),
        audio_prompt_tokens=_audio_tokens(get("prompt_tokens_details")),
        audio_completion_tokens=_audio_tokens(get("completion_tokens_details")),
    )


def _audio_tokens(details: Any) -> int:
    """`audio_tokens` of a details object (a dict as JSON decodes it); 0 without one."""
    if not details:
        return 0
    if type(details) is dict or isinstance(details, Mapping):
        return int(details.get("audio_tokens") or 0)
    return 0


def token_logprobs(value: Any) -> tuple[TokenLogprob, ...] | None:
    """A choice's `logprobs.content` in the chat-completions shape, as OpenAI and Mistral
    send it (None when the answer carries none)."""
    if not isinstance(value, Mapping) or value.get("content") is None:
        return None
    return tuple(
        {
            "token": entry.get("token", ""),
            "logprob": entry.get("logprob", 0.0),
            "bytes": entry.get("bytes"),
            "top_logprobs": [_alternative(t) for t in entry.get("top_logprobs") or ()],
        }
        for entry in value["content"]
    )


def _alternative(entry: Mapping[str, Any]) -> TokenLogprob:
    return {
        "token": entry.get("token", ""),
        "logprob": entry.get("logprob", 0.0),
        "bytes": entry.get("bytes"),
    }


def with_usage(chunks: list[ChatChunk], usage: Mapping[str, Any] | None) -> list[ChatChunk]:
    """`chunks` with the event's usage on the last one (or alone when there is none)."""
    if not usage:
        return chunks
    if not chunks:
        return [ChatChunk(usage=parse_usage(usage))]
    return [*chunks[:-1], attrs.evolve(chunks[-1], usage=parse_usage(usage))]


def decode_vectors(data: Mapping[str, Any]) -> list[list[float]]:
    """The vectors of an embeddings answer, in input order, whatever their encoding."""
    items = sorted(data.get("data") or (), key=lambda item: item.get("index", 0))
    return [_vector(item["embedding"]) for item in items]


def _vector(value: list[float] | str) -> list[float]:
    if isinstance(value, str):
        raw = base64.b64decode(value)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return [float(x) for x in value]


class HttpProvider(Provider):
    """An adapter that talks HTTP to `endpoint.base_url` through a shared client.

    `client` is the app's `Upstream`; a bare `httpx.AsyncClient` (as tests and scripts
    hand in) is wrapped in `HttpxUpstream`.
    """

    def __init__(self, client: Upstream | httpx.AsyncClient, endpoint: ProviderEndpoint) -> None:
        self.client: Upstream = (
            HttpxUpstream(client) if isinstance(client, httpx.AsyncClient) else client
        )
        self.endpoint = endpoint
        self.provider_id = endpoint.provider_id
        self._base = endpoint.base_url.rstrip("/")
        # Fixed for the adapter's life (one per provider, endpoint and key): the client
        # renders a request head from them once per path (`FixedHeaders`).
        self._headers = FixedHeaders({"content-type": "application/json", **self.auth_headers()})

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
        return await self.post_body(
            self.url(path), self._headers, orjson.dumps(payload), model=model
        )

    async def post_body(
        self, url: str, headers: Mapping[str, str], body: RequestBody, *, model: str = ""
    ) -> Any:
        """POST a prepared body (a multipart upload, a body streamed from a spool) and
        return the decoded JSON answer; errors are mapped."""
        try:
            response = await self.client.request("POST", url, headers, body)
        except UpstreamError as exc:
            raise self.transport_error(exc) from exc
        return self.checked_json(response, model)

    async def get_json(self, path: str) -> Any:
        try:
            response = await self.client.request("GET", self.url(path), self._headers)
        except UpstreamError as exc:
            raise self.transport_error(exc) from exc
        return self.checked_json(response, "")

    def checked_json(self, response: UpstreamResponse, model: str) -> Any:
        if response.status >= 400:
            raise self.map_error(response.status, response.body, response.headers, model)
        data = read_json(response.body)
        if data is None:
            raise UpstreamHTTPError(
                self.provider_id, "upstream answered with a body that is not JSON", status=502
            )
        return data

    def open_stream(
        self, path: str, payload: Mapping[str, Any], *, model: str = ""
    ) -> AbstractAsyncContextManager[UpstreamStream]:
        """`stream_body` of `payload` as JSON to `path`."""
        return self.stream_body(self.url(path), self._headers, orjson.dumps(payload), model=model)

    @asynccontextmanager
    async def stream_body(
        self, url: str, headers: Mapping[str, str], body: RequestBody, *, model: str = ""
    ) -> AsyncIterator[UpstreamStream]:
        """POST and hold the streamed response open; an error status is mapped at once.

        The response is closed when the context exits, by any path: unless it was read
        to its end, its connection is closed, which the upstream sees at once.
        """
        opened = False  # only a failure to open is the transport's to map here
        try:
            async with self.client.stream("POST", url, headers, body) as response:
                opened = True
                if response.status >= 400:
                    error_body = await self._read_error_body(response)
                    raise self.map_error(response.status, error_body, response.headers, model)
                yield response
        except UpstreamError as exc:
            if opened:
                raise
            raise self.transport_error(exc) from exc

    async def _read_error_body(self, response: UpstreamStream) -> bytes:
        try:
            return await response.read()
        except UpstreamError:
            return b""

    async def sse_events(self, response: UpstreamStream) -> AsyncGenerator[SSEEvent, None]:
        """The SSE events of a streamed response, one by one (see `sse_batches`)."""
        async with aclosing(self.sse_batches(response)) as batches:
            async for events in batches:
                for event in events:
                    yield event

    async def sse_batches(self, response: UpstreamStream) -> AsyncGenerator[list[SSEEvent], None]:
        """The SSE events of a streamed response, those each network read completed
        together (never an empty list); a broken transfer is `StreamInterrupted`.

        Consume it under `contextlib.aclosing`. The response's byte iterator is a plain
        object, so stopping early strands nothing: leaving `open_stream` closes the
        connection.
        """
        decoder = SSEDecoder()
        try:
            async for chunk in response:
                events = decoder.feed(chunk)
                if events:
                    yield events
        except UpstreamError as exc:
            raise StreamInterrupted(
                self.provider_id, f"the upstream stream broke: {type(exc).__name__}"
            ) from exc

    async def chunk_batches(
        self, response: UpstreamStream, reader: EventReader
    ) -> AsyncGenerator[list[ChatChunk], None]:
        """The chat chunks each network read completed (`reader.read` of each event),
        then `reader.end()`'s: the shape `streams.batched.Batched` hands to the stream
        body, read in the writer's task. A failure `read` raises ends the stream after
        the chunks before it (they are the client's); consume it under `aclosing`."""
        async with aclosing(self.sse_batches(response)) as reads:
            async for events in reads:
                chunks: list[ChatChunk] = []
                try:
                    for event in events:
                        chunks += reader.read(event)
                except ProviderError:
                    if chunks:
                        yield chunks
                    raise
                if chunks:
                    yield chunks
        last = reader.end()
        if last:
            yield last

    def event_json(self, event: SSEEvent) -> Any:
        """The decoded JSON of a stream event; None for an event without data or the
        `[DONE]` terminator. Data that is not JSON is `StreamInterrupted`: skipping it
        handed the client a finished-looking answer with a piece of its text missing."""
        if not event.data or event.data == "[DONE]":
            return None
        try:
            return orjson.loads(event.data)
        except ValueError:
            raise StreamInterrupted(
                self.provider_id, "the upstream sent a stream event that is not JSON"
            ) from None

    def transport_error(self, exc: UpstreamError) -> ProviderError:
        """Map a transport failure that happened before any answer."""
        if isinstance(exc, Timeout):
            return UpstreamTimeout(
                self.provider_id, "the upstream did not answer in time", timeout_ms=0
            )
        if isinstance(exc, ProtocolError):
            return StreamInterrupted(
                self.provider_id, "the upstream closed the connection before answering"
            )
        return UpstreamUnavailable(
            self.provider_id, f"could not reach the upstream: {type(exc).__name__}"
        )
