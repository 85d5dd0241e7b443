"""The provider interface: one small base class, every operation optional.

Shaped like httpx's transports: the gateway holds `Provider` objects and calls the
operation it needs; an adapter overrides the operations its vendor offers and inherits
`Unsupported` for the rest. Adapters raise only `providers.errors` exceptions.

Deadlines are the caller's: no method takes a timeout. Cancelling a call (a client
disconnect, a lost race) closes its upstream request at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import attrs

from providers.audio_types import (
    LiveTranscriptionRequest,
    SpeechAudio,
    SpeechRequest,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.errors import Unsupported
from providers.ocr_types import OcrRequest, OcrResult
from providers.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    RerankRequest,
    RerankResult,
)

ChatStream = AbstractAsyncContextManager[AsyncIterator[ChatChunk]]
TranscriptStream = AbstractAsyncContextManager[AsyncIterator[TranscriptEvent]]
AudioStream = AbstractAsyncContextManager[AsyncIterator[bytes]]


@attrs.frozen
class ProviderEndpoint:
    """Where and how to reach one configured provider.

    `api_key` is the decrypted credential; never log or serialise this object.
    """

    provider_id: str
    base_url: str
    api_key: str = attrs.field(repr=False)
    settings: dict[str, Any] = attrs.field(factory=dict)


class Provider:
    """Base class of every adapter; each operation raises `Unsupported` unless overridden."""

    provider_id: str = "provider"

    async def chat(self, request: ChatRequest) -> ChatResult:
        """A whole chat answer."""
        raise Unsupported(self.provider_id, f"{self.provider_id} does not serve chat")

    def chat_stream(self, request: ChatRequest) -> ChatStream:
        """An async context manager giving the answer's chunks as they arrive.

        Leaving the context (normally, by error or by cancellation) closes the upstream
        response.
        """
        raise Unsupported(self.provider_id, f"{self.provider_id} does not stream chat")

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        raise Unsupported(self.provider_id, f"{self.provider_id} does not serve embeddings")

    async def rerank(self, request: RerankRequest) -> RerankResult:
        raise Unsupported(self.provider_id, f"{self.provider_id} does not serve rerank")

    async def ocr(self, request: OcrRequest) -> OcrResult:
        raise Unsupported(self.provider_id, f"{self.provider_id} does not serve OCR")

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        raise Unsupported(self.provider_id, f"{self.provider_id} does not transcribe audio")

    def transcribe_stream(self, request: TranscriptionRequest) -> TranscriptStream:
        """Recognised text as it comes, then one `TranscriptDone`; leaving closes upstream."""
        raise Unsupported(self.provider_id, f"{self.provider_id} does not stream transcription")

    def transcribes_live(self, model: str) -> bool:
        """Whether `model` (the upstream's id) can be fed audio while it is spoken
        (`transcribe_live`); deciding costs nothing, so a caller plans with it."""
        return False

    def transcribe_live(
        self, request: LiveTranscriptionRequest, audio: AsyncIterable[bytes]
    ) -> TranscriptStream:
        """Recognised text while `audio` is still arriving (its end is the end of the
        turn), then one `TranscriptDone` over all of it. The adapter reads `audio` in a
        task of its own; leaving closes the upstream and stops reading."""
        raise Unsupported(self.provider_id, f"{self.provider_id} does not transcribe live")

    async def speech(self, request: SpeechRequest) -> SpeechAudio:
        raise Unsupported(self.provider_id, f"{self.provider_id} does not synthesise speech")

    def speech_stream(self, request: SpeechRequest) -> AudioStream:
        """Audio bytes in `request.response_format` as the upstream produces them."""
        raise Unsupported(self.provider_id, f"{self.provider_id} does not stream speech")

    async def list_models(self) -> list[str]:
        """Model ids the upstream reports; used by the management `test` call."""
        raise Unsupported(self.provider_id, f"{self.provider_id} cannot list models")
