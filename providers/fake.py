"""A provider driven by handler functions, for tests (like httpx's MockTransport).

It records the requests it was given and counts the streams it opened and closed, so a
test can assert that every upstream stream was closed, on every path.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager

from providers.base import Provider
from providers.errors import Unsupported
from providers.types import ChatChunk, ChatRequest, ChatResult

ChatHandler = Callable[[ChatRequest], Awaitable[ChatResult]]
StreamHandler = Callable[[ChatRequest], AsyncGenerator[ChatChunk, None]]


class FakeProvider(Provider):
    def __init__(
        self,
        provider_id: str = "fake",
        *,
        chat: ChatHandler | None = None,
        stream: StreamHandler | None = None,
    ) -> None:
        self.provider_id = provider_id
        self._chat = chat
        self._stream = stream
        self.requests: list[ChatRequest] = []
        self.streams_opened = 0
        self.streams_closed = 0

    async def chat(self, request: ChatRequest) -> ChatResult:
        self.requests.append(request)
        if self._chat is None:
            raise Unsupported(self.provider_id, "no chat handler")
        return await self._chat(request)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[ChatChunk]]:
        self.requests.append(request)
        if self._stream is None:
            raise Unsupported(self.provider_id, "no stream handler")
        self.streams_opened += 1
        try:
            async with aclosing(self._stream(request)) as chunks:
                yield chunks
        finally:
            self.streams_closed += 1

    @property
    def open_streams(self) -> int:
        return self.streams_opened - self.streams_closed
