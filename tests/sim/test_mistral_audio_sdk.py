"""Voxtral transcription in the simulator, through the official `mistralai` SDK."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest
import trio
from mistralai.client import Mistral
from mistralai.client.models import TranscriptionStreamDone, TranscriptionStreamTextDelta
from mistralai.extra.realtime import (
    AudioFormat,
    RealtimeTranscriptionSessionCreated,
    RealtimeTranscriptionSessionUpdated,
    UnknownRealtimeEvent,
)

from providers.audio_codec import Pcm, encode
from providers.sim.server import SimServer

SILENCE_WAV = encode(Pcm(b"\0\0" * 24_000 * 2, 24_000), "wav")  # two seconds


@pytest.fixture
def sdk(sim: SimServer) -> Iterator[Mistral]:
    with Mistral(api_key="sk-test", server_url=sim.base_url("mistral")) as client:
        yield client


async def test_diarized_transcription_with_context_bias(sdk: Mistral) -> None:
    def call():  # type: ignore[no-untyped-def]
        return sdk.audio.transcriptions.complete(
            model="voxtral-mini-latest",
            file={"content": SILENCE_WAV, "file_name": "a.wav"},
            diarize=True,
            context_bias=["Voxtral", "gateway"],
        )

    with trio.fail_after(20):
        answer = await trio.to_thread.run_sync(call)
    assert answer.text.startswith("This is a simulated transcription of 2.0 seconds")
    assert answer.text.endswith("Terms: Voxtral, gateway.")
    assert answer.segments is not None
    assert [s.speaker_id for s in answer.segments] == ["speaker_1", "speaker_2"]
    assert answer.usage.prompt_audio_seconds == 2


async def test_streamed_transcription_through_the_sdk(sdk: Mistral) -> None:
    """The SDK's `stream` reads the simulator's events: language, word deltas, segments,
    done (with the whole text)."""

    def call() -> list[tuple[str, object]]:
        events = sdk.audio.transcriptions.stream(
            model="voxtral-mini-latest",
            file={"content": SILENCE_WAV, "file_name": "a.wav"},
            diarize=True,
        )
        with events as stream:
            return [(event.event, event.data) for event in stream]

    with trio.fail_after(20):
        events = await trio.to_thread.run_sync(call)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "transcription.language" and kinds[-1] == "transcription.done"
    deltas = [data.text for kind, data in events if kind == "transcription.text.delta"]  # type: ignore[attr-defined]
    assert len(deltas) > 5
    done = events[-1][1]
    assert "".join(deltas) == done.text  # type: ignore[attr-defined]
    speakers = [d.speaker_id for k, d in events if k == "transcription.segment"]  # type: ignore[attr-defined]
    assert speakers == ["speaker_1", "speaker_2"]


async def test_realtime_transcription_through_the_sdk(sim: SimServer) -> None:
    """The SDK's realtime client (`audio.realtime.transcribe_stream`, asyncio and
    `websockets`) holds a Voxtral Realtime session with the simulator: every event it
    reads is one it knows (no `UnknownRealtimeEvent`), the words come while the audio
    is still being sent, and `transcription.done` carries the whole text."""
    sim.transcripts.append("Voxtral hears every word of this sentence")
    pcm = b"\0\0" * 16_000 * 3  # three seconds at 16 kHz

    async def session() -> tuple[list[object], int]:
        sent = 0
        heard = asyncio.Event()

        async def audio() -> AsyncIterator[bytes]:
            """100 ms a message; before the last second, wait (10 s at most) for the
            first word, so "while the audio is still being sent" does not depend on
            how the two sides happen to be scheduled on a busy machine."""
            nonlocal sent
            for start in range(0, len(pcm), 3200):
                if start == len(pcm) - 16_000 * 2:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(heard.wait(), 10)
                sent = start
                yield pcm[start : start + 3200]
                await asyncio.sleep(0)

        first_word_at = -1
        seen: list[object] = []
        with Mistral(api_key="sk-test", server_url=sim.base_url("mistral")) as client:
            events = client.audio.realtime.transcribe_stream(
                audio(),
                model="voxtral-mini-transcribe-realtime-2602",
                audio_format=AudioFormat(encoding="pcm_s16le", sample_rate=16_000),
            )
            async for event in events:
                if isinstance(event, TranscriptionStreamTextDelta) and first_word_at < 0:
                    first_word_at = sent
                    heard.set()
                seen.append(event)
        return seen, first_word_at

    with trio.fail_after(30):
        seen, first_word_at = await trio.to_thread.run_sync(asyncio.run, session())
    assert not [e for e in seen if isinstance(e, UnknownRealtimeEvent)], seen
    assert isinstance(seen[0], RealtimeTranscriptionSessionCreated)
    assert any(isinstance(e, RealtimeTranscriptionSessionUpdated) for e in seen)
    done = seen[-1]
    assert isinstance(done, TranscriptionStreamDone)
    words = [e.text for e in seen if isinstance(e, TranscriptionStreamTextDelta)]
    assert "".join(words) == done.text == "Voxtral hears every word of this sentence"
    assert 0 <= first_word_at < len(pcm) - 3200  # recognised before the audio ended
