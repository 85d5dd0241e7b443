"""A spooled transcription upload goes to the vendor read piece by piece from its spool:
never read whole, re-read from the start by a fallback, kept open while a streamed
transcription runs. The simulator decodes what arrives, so a wrong or short body shows
in the transcript it answers."""

from __future__ import annotations

import os
from collections.abc import Callable

import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.kernels.uploads.spooled import SPOOL_MEMORY_BYTES, Upload
from providers.clip_source import PIECE_BYTES
from providers.sim.core import Fault
from tests.providers.wav import square_wave_wav

SECONDS = 30.0  # 960 kB at 16 kHz: past the spool's memory (read from disk), 4 pieces


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every positional read of a spooled clip; a read of more than one
    piece (a whole-file read) or a whole read of the upload fails the request."""
    sizes: list[int] = []
    real_pread: Callable[[int, int, int], bytes] = os.pread

    def bounded_pread(fd: int, size: int, offset: int) -> bytes:
        if size > PIECE_BYTES:
            raise AssertionError(f"a read of {size} bytes, over the {PIECE_BYTES} bound")
        sizes.append(size)
        return real_pread(fd, size, offset)

    def whole(self: Upload) -> bytes:
        raise AssertionError("the upload was read whole")

    monkeypatch.setattr(os, "pread", bounded_pread)
    monkeypatch.setattr(Upload, "read_all", whole)
    return sizes


def heard(seconds: float) -> str:
    return f"This is a simulated transcription of {seconds:.1f} seconds of audio."


# Each vendor's body: OpenAI's and Mistral's multipart, Gemini's JSON with the clip
# inline as base64 (encoded piece by piece).
VENDOR_MODELS = ["whisper-1", "voxtral-mini-latest", "gemini-2.5-flash-transcribe"]


@pytest.mark.parametrize("model", VENDOR_MODELS)
async def test_a_large_upload_reaches_the_vendor_in_bounded_reads(
    client: openai.AsyncOpenAI, reads: list[int], model: str
) -> None:
    audio = square_wave_wav(SECONDS)
    assert len(audio) > 3 * SPOOL_MEMORY_BYTES
    result = await client.audio.transcriptions.create(
        model=model, file=("long.wav", audio), response_format="json"
    )
    assert result.text == heard(SECONDS)
    assert max(reads) <= PIECE_BYTES
    # Measured once (decoding) and sent once: at least two passes over the file.
    assert sum(reads) >= 2 * len(audio)


@pytest.mark.parametrize(
    ("model", "failing", "next_model"),
    [
        ("whisper-1", "whisper-1", "gpt-transcribe"),  # multipart, then again
        ("gemini-2.5-flash-transcribe", "gemini-2.5-flash", "voxtral-mini-latest"),  # JSON
    ],
)
async def test_a_fallback_sends_the_upload_again_from_its_start(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    reads: list[int],
    model: str,
    failing: str,
    next_model: str,
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model=failing, status=500, remaining=1))
    audio = square_wave_wav(SECONDS)
    response = await client.audio.transcriptions.with_raw_response.create(
        model=model, file=("long.wav", audio), response_format="json"
    )
    assert response.headers["x-service-model"] == next_model
    assert response.headers["x-service-fallback"] == "true"
    assert response.parse().text == heard(SECONDS)
    assert sum(reads) >= 3 * len(audio)  # measured, sent to the first, sent again


@pytest.mark.parametrize(
    "model", ["gpt-4o-mini-transcribe", "voxtral-mini-latest", "gemini-2.5-flash-transcribe"]
)
async def test_a_streamed_transcription_reads_the_spool_while_it_streams(
    client: openai.AsyncOpenAI, reads: list[int], model: str
) -> None:
    audio = square_wave_wav(SECONDS)
    stream = await client.audio.transcriptions.create(
        model=model, file=("long.wav", audio), stream=True
    )
    events = [event async for event in stream]
    assert events[-1].type == "transcript.text.done"
    assert events[-1].text == heard(SECONDS)  # type: ignore[union-attr]
    assert max(reads) <= PIECE_BYTES
