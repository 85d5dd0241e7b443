"""ElevenLabs text-to-speech in the simulator, through the official `elevenlabs` SDK."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import httpx
import pytest
import soundfile
from elevenlabs.client import AsyncElevenLabs
from elevenlabs.core.api_error import ApiError

from providers.sim.server import SimServer

RACHEL = "21m00Tcm4TlvDq8ikWAM"


@pytest.fixture
async def vendor(sim: SimServer) -> AsyncIterator[AsyncElevenLabs]:
    """The async SDK pointed at the simulator, its connection pool closed after the test."""
    async with httpx.AsyncClient(timeout=30) as http:
        yield AsyncElevenLabs(
            base_url=sim.base_url("elevenlabs"), api_key="xi-test", httpx_client=http
        )


async def test_convert_streams_real_mp3(vendor: AsyncElevenLabs) -> None:
    chunks = [
        chunk
        async for chunk in vendor.text_to_speech.stream(
            RACHEL, text="Hello from the simulated ElevenLabs. " * 3, model_id="eleven_flash_v2_5"
        )
    ]
    assert len(chunks) > 1
    info = soundfile.info(io.BytesIO(b"".join(chunks)))
    assert info.format == "MP3" and info.duration > 1.0


async def test_pcm_output_and_unknown_voice(vendor: AsyncElevenLabs) -> None:
    chunks = [
        chunk
        async for chunk in vendor.text_to_speech.convert(
            RACHEL, text="Hi.", model_id="eleven_turbo_v2_5", output_format="pcm_24000"
        )
    ]
    assert len(b"".join(chunks)) % 2 == 0 and len(b"".join(chunks)) > 4800
    with pytest.raises(ApiError) as caught:
        async for _ in vendor.text_to_speech.convert("nobody", text="Hi.", model_id="x"):
            pass
    assert caught.value.status_code == 404
