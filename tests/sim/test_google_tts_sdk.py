"""Gemini speech generation in the simulator, through the official `google-genai` SDK."""

from __future__ import annotations

import trio
from google import genai
from google.genai import types

from providers.sim.server import SimServer

TTS_MODEL = "gemini-2.5-flash-preview-tts"


async def test_sdk_speech_generation_returns_pcm(sim: SimServer) -> None:
    def call() -> types.GenerateContentResponse:
        options = types.HttpOptions(base_url=sim.base_url("google"), timeout=20_000)
        with genai.Client(api_key="test-key", http_options=options) as client:
            return client.models.generate_content(
                model=TTS_MODEL,
                contents="Say cheerfully: have a wonderful day!",
                config=types.GenerateContentConfig(
                    response_modalities=["AUDIO"],
                    speech_config=types.SpeechConfig(
                        voice_config=types.VoiceConfig(
                            prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name="Kore")
                        )
                    ),
                ),
            )

    with trio.fail_after(30):
        response = await trio.to_thread.run_sync(call)
    assert response.candidates and response.candidates[0].content
    parts = response.candidates[0].content.parts or []
    inline = parts[0].inline_data
    assert inline is not None and inline.mime_type == "audio/L16;codec=pcm;rate=24000"
    assert inline.data and len(inline.data) % 2 == 0 and len(inline.data) > 24_000
