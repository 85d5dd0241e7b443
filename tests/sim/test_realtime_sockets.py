"""The vendors' realtime sockets, adapter against simulator over real sockets: OpenAI's
Realtime API (a conversation's handshake, a transcription session) and Mistral's
Voxtral Realtime, fed audio while it is "spoken"."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from providers.audio_types import LiveTranscriptionRequest, TranscriptDelta, TranscriptDone
from providers.base import ProviderEndpoint
from providers.errors import AuthenticationFailed, ModelNotFound, ProviderError
from providers.mistral import MistralProvider
from providers.openai import OpenAIProvider
from providers.sim.core import Fault
from providers.sim.server import SimServer
from providers.vendor_socket import read_event

SAID = "Book a table for two tomorrow"
RATE = 16_000
PIECE = bytes(RATE * 2 // 10)  # 100 ms of silence: the simulators script what is heard


def openai_adapter(http: httpx.AsyncClient, sim: SimServer) -> OpenAIProvider:
    return OpenAIProvider(http, ProviderEndpoint("openai", sim.base_url("openai") + "/v1", "sk"))


def mistral_adapter(http: httpx.AsyncClient, sim: SimServer) -> MistralProvider:
    return MistralProvider(http, ProviderEndpoint("mistral", sim.base_url("mistral"), "sk"))


async def test_a_conversation_opens_with_the_providers_key(sim: SimServer) -> None:
    async with httpx.AsyncClient() as http:
        provider = openai_adapter(http, sim)
        async with provider.realtime_socket({"model": "gpt-realtime"}, model="gpt-realtime") as s:
            created = read_event(await s.receive())
    assert created["type"] == "session.created" and created["event_id"]
    assert created["session"]["model"] == "gpt-realtime"


@pytest.mark.parametrize(
    ("model", "fault", "error"),
    [
        ("gpt-4o-mini", None, ModelNotFound),
        ("gpt-realtime", Fault(model="gpt-realtime", status=401), AuthenticationFailed),
    ],
)
async def test_a_refused_handshake_maps_like_http(
    sim: SimServer, model: str, fault: Fault | None, error: type[ProviderError]
) -> None:
    if fault is not None:
        sim.faults.add(fault)
    async with httpx.AsyncClient() as http:
        provider = openai_adapter(http, sim)
        with pytest.raises(error):
            async with provider.realtime_socket({"model": model}, model=model):
                pass


async def _spoken(pieces: int, pause: trio.Event | None = None) -> AsyncIterator[bytes]:
    for index in range(pieces):
        if pause is not None and index == pieces // 2:
            await pause.wait()
        yield PIECE


@pytest.mark.parametrize(
    ("vendor", "model"),
    [("openai", "gpt-4o-transcribe"), ("mistral", "voxtral-mini-transcribe-realtime-2602")],
)
async def test_live_transcription_gives_the_scripted_text(
    sim: SimServer, vendor: str, model: str
) -> None:
    sim.transcripts.append(SAID)
    request = LiveTranscriptionRequest(model, RATE, language="en")
    async with httpx.AsyncClient() as http:
        provider = openai_adapter(http, sim) if vendor == "openai" else mistral_adapter(http, sim)
        assert provider.transcribes_live(model)
        assert not provider.transcribes_live("whisper-large-v3-batch")
        with trio.fail_after(10):
            async with provider.transcribe_live(request, _spoken(20)) as events:
                received = [event async for event in events]
    deltas = "".join(e.text for e in received if isinstance(e, TranscriptDelta))
    done = received[-1]
    assert isinstance(done, TranscriptDone) and done.result.text == SAID
    assert deltas.strip() == SAID
    assert done.result.duration_s == pytest.approx(2.0)


async def test_voxtral_recognises_while_the_audio_still_comes(sim: SimServer) -> None:
    """Half the turn is sent, then the audio pauses: words arrive before the rest."""
    sim.transcripts.append(SAID)
    request = LiveTranscriptionRequest("voxtral-mini-transcribe-realtime-2602", RATE)
    pause = trio.Event()
    async with httpx.AsyncClient() as http:
        provider = mistral_adapter(http, sim)
        with trio.fail_after(10):
            async with provider.transcribe_live(request, _spoken(20, pause)) as events:
                first = await anext(events)
                pause.set()
                rest = [event async for event in events]
    assert isinstance(first, TranscriptDelta) and first.text == "Book"
    assert isinstance(rest[-1], TranscriptDone) and rest[-1].result.text == SAID
