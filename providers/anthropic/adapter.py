"""The Anthropic adapter: the pure pieces wired to the upstream client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any

from providers.anthropic.answers import AnthropicStreamTranslator, parse_message
from providers.anthropic.errors import map_anthropic_error
from providers.anthropic.payload import (
    ANTHROPIC_VERSION,
    DEFAULT_MAX_TOKENS,
    MESSAGES_PATH,
    messages_payload,
)
from providers.errors import (
    ProviderError,
)
from providers.http import HttpProvider
from providers.types import (
    JSON,
    ChatChunk,
    ChatRequest,
    ChatResult,
)
from streams.batched import Batched, FailureHeld
from streams.sse import SSEEvent


class AnthropicProvider(HttpProvider):
    """Chat (whole and streamed) and model listing over the Anthropic Messages API.

    `endpoint.base_url` is the vendor root (`https://api.anthropic.com`); the optional
    setting `default_max_tokens` fills Anthropic's required `max_tokens`.
    """

    def auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self.endpoint.api_key, "anthropic-version": ANTHROPIC_VERSION}

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_anthropic_error(self.provider_id, status, body, headers, model)

    @property
    def default_max_tokens(self) -> int:
        return int(self.endpoint.settings.get("default_max_tokens") or DEFAULT_MAX_TOKENS)

    def payload(self, request: ChatRequest, *, stream: bool) -> JSON:
        return messages_payload(
            request,
            stream=stream,
            default_max_tokens=self.default_max_tokens,
            provider=self.provider_id,
        )

    async def chat(self, request: ChatRequest) -> ChatResult:
        """A whole answer; cancellation abandons the upstream request."""
        data = await self.post_json(
            MESSAGES_PATH, self.payload(request, stream=False), model=request.model
        )
        return parse_message(data)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[Batched[ChatChunk]]:
        """The answer's chunks, a network read's at a time (`streams.batched`); the
        upstream response closes on exit."""
        payload = self.payload(request, stream=True)
        async with (
            self.open_stream(MESSAGES_PATH, payload, model=request.model) as resp,
            aclosing(self.chunk_batches(resp, _MessagesEvents(self, request.model))) as batches,
        ):
            yield Batched(batches, lambda: resp.complete)

    async def list_models(self) -> list[str]:
        """Every model id, following Anthropic's `has_more`/`last_id` pagination."""
        ids: list[str] = []
        path = "/v1/models?limit=1000"
        for _ in range(50):  # a bound, in case an upstream keeps saying has_more
            data = await self.get_json(path)
            ids.extend(_model_ids(data.get("data") or ()))
            if not data.get("has_more") or not data.get("last_id"):
                break
            path = f"/v1/models?limit=1000&after_id={data['last_id']}"
        return ids


def _model_ids(items: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(item["id"]) for item in items if "id" in item]


class _MessagesEvents(FailureHeld[ChatChunk]):
    """A Messages stream's events as canonical chunks (`HttpProvider.chunk_batches`).

    The transfer is always read to its end, even past `message_stop` or an `error`
    event (Anthropic ends the response right after either), so that the connection is
    left clean; an error is raised once the transfer has ended (`FailureHeld`), a stream
    cut before `message_stop` then too.
    """

    def __init__(self, provider: HttpProvider, model: str) -> None:
        super().__init__(ProviderError)
        self._provider = provider
        self._translator = AnthropicStreamTranslator(provider.provider_id, model)

    def decode(self, event: SSEEvent) -> dict[str, Any] | None:
        data = self._provider.event_json(event)
        if self._translator.done or not isinstance(data, dict):
            return None
        data.setdefault("type", event.event)
        return data

    def feed(self, data: dict[str, Any]) -> list[ChatChunk]:
        return self._translator.feed(data)

    def close(self) -> list[ChatChunk]:
        self._translator.finish()
        return []
