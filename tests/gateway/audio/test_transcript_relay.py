"""A streamed transcription relays each event the moment the adapter yields it: the
official client reads the first `transcript.text.delta` while the upstream is still held
back, and the rest once it goes on. The gateway's `openai` provider is replaced by a
gated fake (the gateway, the fake and the client share the test's trio loop)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager

import openai
import trio

from gateway.app.server import RunningGateway
from gateway.upstream.registry import ConfiguredProvider
from providers.audio_types import (
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.base import Provider
from tests.providers.wav import square_wave_wav


class GatedTranscriber(Provider):
    """Yields "Hello", waits for `gate`, then " world" and the end; records its steps."""

    provider_id = "openai"

    def __init__(self) -> None:
        self.gate = trio.Event()
        self.steps: list[str] = []

    @asynccontextmanager
    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        async with aclosing(self._events(request)) as events:  # as the real adapters do
            yield events
        self.steps.append("closed")

    async def _events(self, request: TranscriptionRequest) -> AsyncGenerator[TranscriptEvent, None]:
        self.steps.append("first")
        yield TranscriptDelta("Hello")
        await self.gate.wait()
        self.steps.append("rest")
        yield TranscriptDelta(" world")
        yield TranscriptDone(TranscriptionResult("Hello world", "en", request.audio.duration_s))


def gated_openai(gateway: RunningGateway) -> GatedTranscriber:
    fake = GatedTranscriber()
    configured = gateway.state.registry.configured("default")
    assert isinstance(configured, dict)
    configured["openai"] = ConfiguredProvider(configured["openai"].record, fake)
    return fake


async def test_each_transcript_event_leaves_as_the_adapter_yields_it(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    fake = gated_openai(gateway)
    stream = await client.audio.transcriptions.create(
        model="gpt-4o-mini-transcribe", file=("a.wav", square_wave_wav(2.0)), stream=True
    )
    events = aiter(stream)
    with trio.fail_after(30):  # a relay that batched events would wait for the gate forever
        first = await anext(events)
    assert first.type == "transcript.text.delta" and first.delta == "Hello"  # type: ignore[union-attr]
    assert fake.steps == ["first"]  # the upstream is still held back
    fake.gate.set()
    rest = [event async for event in events]
    assert [e.type for e in rest] == ["transcript.text.delta", "transcript.text.done"]
    assert rest[-1].text == "Hello world"  # type: ignore[union-attr]
    assert fake.steps == ["first", "rest", "closed"]
