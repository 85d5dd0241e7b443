"""The Gemini adapter: the pure pieces wired to the upstream client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any
from urllib.parse import quote

from providers.errors import (
    ProviderError,
)
from providers.google.answers import (
    StreamTranslator,
    estimate_tokens,
    parse_generate,
    parse_model_ids,
    parse_vectors,
)
from providers.google.errors import map_google_error
from providers.google.payload import (
    API_VERSION,
    MAX_EMBED_REQUESTS,
    embedding_payload,
    generate_payload,
    model_path,
)
from providers.google_audio import GoogleAudio
from providers.http import (
    HttpProvider,
    batches,
    merge_embeddings,
)
from providers.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
)
from streams.batched import Batched, FailureHeld
from streams.sse import SSEEvent

MAX_MODEL_PAGES = 20  # model-list pages read at most


class GoogleProvider(GoogleAudio):
    """Chat, streamed chat, embeddings and model listing over the Gemini API."""

    def auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.endpoint.api_key}

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_google_error(self.provider_id, status, body, headers, model)

    async def chat(self, request: ChatRequest) -> ChatResult:
        path = model_path(request.model, "generateContent")
        data = await self.post_json(path, generate_payload(request), model=request.model)
        return parse_generate(data, request.model, provider=self.provider_id)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[Batched[ChatChunk]]:
        """The answer's chunks, a network read's at a time (`streams.batched`); the
        upstream response closes on exit."""
        path = model_path(request.model, "streamGenerateContent") + "?alt=sse"
        payload = generate_payload(request)
        async with (
            self.open_stream(path, payload, model=request.model) as response,
            aclosing(self.chunk_batches(response, _GenerateEvents(self))) as chunks,
        ):
            yield Batched(chunks, lambda: response.complete)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embeddings through `batchEmbedContents`, in calls of at most 100 inputs made one
        after the other (a failed call fails the whole); usage is estimated (see
        `estimate_tokens`) because the API does not report it. Cancelling it closes the
        call in flight."""
        path = model_path(request.model, "batchEmbedContents")
        parts = []
        for texts in batches(request.inputs, MAX_EMBED_REQUESTS):
            payload = embedding_payload(request, texts)
            data = await self.post_json(path, payload, model=request.model)
            parts.append((parse_vectors(data), estimate_tokens(texts)))
        return merge_embeddings(request.model, parts)

    async def list_models(self) -> list[str]:
        """Every page of `GET /v1beta/models`, up to a bound against a looping token."""
        ids: list[str] = []
        token = ""
        for _ in range(MAX_MODEL_PAGES):
            query = "?pageSize=1000" + (f"&pageToken={quote(token)}" if token else "")
            data = await self.get_json(f"{API_VERSION}/models{query}")
            ids.extend(parse_model_ids(data))
            token = str(data.get("nextPageToken") or "")
            if not token:
                break
        return ids


class _GenerateEvents(FailureHeld[ChatChunk]):
    """A `streamGenerateContent` stream's events as canonical chunks
    (`HttpProvider.chunk_batches`). An error event or a blocked prompt is raised only
    once the upstream has ended its stream (which it does right after either), so that
    the connection is left clean (`FailureHeld`)."""

    def __init__(self, provider: HttpProvider) -> None:
        super().__init__(ProviderError)
        self._provider = provider
        self._translator = StreamTranslator(provider.provider_id)

    def decode(self, event: SSEEvent) -> dict[str, Any] | None:
        data = self._provider.event_json(event)
        return data if isinstance(data, dict) else None

    def feed(self, data: dict[str, Any]) -> list[ChatChunk]:
        return self._translator.feed(data)

    def close(self) -> list[ChatChunk]:
        return self._translator.close()
