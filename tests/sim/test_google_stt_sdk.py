"""Gemini audio understanding (transcription) in the simulator, through the official
`google-genai` SDK: the audio as an inline part, whole and streamed."""

from __future__ import annotations

import trio
from google import genai
from google.genai import types

from providers.audio_codec import Pcm, encode
from providers.sim.server import SimServer

MODEL = "gemini-2.5-flash"
SILENCE_WAV = encode(Pcm(b"\0\0" * 24_000 * 2, 24_000), "wav")  # two seconds
HEARD = "This is a simulated transcription of 2.0 seconds of audio."


def contents() -> types.Content:
    audio = types.Part.from_bytes(data=SILENCE_WAV, mime_type="audio/wav")
    return types.Content(role="user", parts=[types.Part(text="Transcribe this audio."), audio])


async def test_sdk_transcribes_inline_audio(sim: SimServer) -> None:
    def call() -> types.GenerateContentResponse:
        options = types.HttpOptions(base_url=sim.base_url("google"), timeout=20_000)
        with genai.Client(api_key="test-key", http_options=options) as client:
            return client.models.generate_content(model=MODEL, contents=contents())

    with trio.fail_after(30):
        response = await trio.to_thread.run_sync(call)
    assert response.text == HEARD
    assert response.usage_metadata is not None
    assert response.usage_metadata.prompt_token_count == 64 + 40  # 32 audio tokens a second


async def test_sdk_streams_the_transcript(sim: SimServer) -> None:
    def call() -> list[str]:
        options = types.HttpOptions(base_url=sim.base_url("google"), timeout=20_000)
        with genai.Client(api_key="test-key", http_options=options) as client:
            stream = client.models.generate_content_stream(model=MODEL, contents=contents())
            return [chunk.text or "" for chunk in stream]

    with trio.fail_after(30):
        pieces = await trio.to_thread.run_sync(call)
    assert len(pieces) > 5
    assert "".join(pieces) == HEARD
