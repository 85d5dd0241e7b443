"""The Cohere adapter: chat (`/v2/chat`, whole and streamed, with tools), rerank, embeddings
and model listing, over the shared HTTP plumbing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

from providers.cohere.chat import chat_payload, parse_chat, read_event
from providers.cohere.errors import map_cohere_error
from providers.cohere.retrieval import (
    DEFAULT_INPUT_TYPE,
    INPUT_TYPES,
    MAX_TEXTS_PER_CALL,
    embed_payload,
    parse_embed,
    parse_model_names,
    parse_rerank,
    rerank_payload,
)
from providers.errors import ProviderError, StreamInterrupted
from providers.http import HttpProvider, batches, merge_embeddings
from providers.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    RerankRequest,
    RerankResult,
)
from streams.batched import Batched
from streams.sse import SSEEvent


class CohereProvider(HttpProvider):
    """Chat, rerank, embeddings and model listing on Cohere.

    `endpoint.base_url` is the vendor root (`https://api.cohere.com`). Settings:
    `input_type` (embeddings; default `search_document`), `max_tokens_per_doc` (rerank).
    """

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_cohere_error(self.provider_id, status, body, headers, model)

    async def chat(self, request: ChatRequest) -> ChatResult:
        """One whole answer; cancelling the call closes the upstream request."""
        payload = chat_payload(request, stream=False, provider=self.provider_id)
        data = await self.post_json("/v2/chat", payload, model=request.model)
        return parse_chat(data, request.model, self.provider_id)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[Batched[ChatChunk]]:
        """The answer's chunks, a network read's at a time (`streams.batched`); leaving
        the context closes the response."""
        payload = chat_payload(request, stream=True, provider=self.provider_id)
        async with (
            self.open_stream("/v2/chat", payload, model=request.model) as response,
            aclosing(self.chunk_batches(response, _ChatEvents(self))) as chunks,
        ):
            yield Batched(chunks, lambda: response.complete)

    async def rerank(self, request: RerankRequest) -> RerankResult:
        """One rerank call; cancelling it closes the upstream request."""
        limit = self.endpoint.settings.get("max_tokens_per_doc")
        payload = rerank_payload(request, max_tokens_per_doc=limit)
        data = await self.post_json("/v2/rerank", payload, model=request.model)
        return parse_rerank(data, request.model)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embeds in batches of 96, one after the other (a failed batch fails the call);
        cancelling it closes the batch in flight."""
        input_type = self._input_type()
        parts = []
        for texts in batches(request.inputs, MAX_TEXTS_PER_CALL):
            payload = embed_payload(request, texts, input_type)
            parts.append(
                parse_embed(await self.post_json("/v2/embed", payload, model=request.model))
            )
        return merge_embeddings(request.model, parts)

    def _input_type(self) -> str:
        value: Any = self.endpoint.settings.get("input_type", DEFAULT_INPUT_TYPE)
        return value if value in INPUT_TYPES else DEFAULT_INPUT_TYPE

    async def list_models(self) -> list[str]:
        return parse_model_names(await self.get_json("/v1/models"))


class _ChatEvents:
    """`/v2/chat` stream events as canonical chunks (`HttpProvider.chunk_batches`) until
    `message-end`, the rest read to the end unread; a stream ending before it was cut."""

    def __init__(self, provider: HttpProvider) -> None:
        self._provider = provider
        self._finished = False

    def read(self, event: SSEEvent) -> list[ChatChunk]:
        data = self._provider.event_json(event)
        if not isinstance(data, dict) or self._finished:
            return []
        chunk = read_event(data, self._provider.provider_id)
        if chunk is None:
            return []
        self._finished = chunk.finish_reason is not None
        return [chunk]

    def end(self) -> list[ChatChunk]:
        if not self._finished:
            raise StreamInterrupted(
                self._provider.provider_id, "the upstream stream ended before finishing"
            )
        return []
