"""The overlap at exact virtual times through the whole gateway and the simulators.

One virtual clock (trio's `MockClock`) runs the gateway, the simulators and the client.
It jumps to the next deadline once the loop has been idle for `IDLE_S` of real time, not
at once: worker threads (SQLite, audio decoding, the answer's MP3 encoder, the
simulator's eSpeak) leave the loop idle while they work, and a clock jumping then would
race through every timer (the client's timeout included) before they are done, or
make a thread step on the critical path look like virtual time.

The simulators script each stage's latency (a fault's `delay_ms` before the answer of
one model, and the model's pace): recognition answers `T_S` after it is asked; the
model's first word comes `LLM_DELAY_S` after it is asked, then a word every
1/`WORDS_PER_S`, so its first sentence ("Of course.") is complete when the third word
arrives, `A_S` after the transcript; speech's first bytes come `B_S` after it is asked.
The first `audio.chunk` must then reach the client exactly `A_S + B_S` after
`transcription.final`, while the model is still writing (a sequential pipeline would
wait for its last word), and a client that leaves closes every upstream request at once
(the simulator counts the requests it is answering).
"""

from __future__ import annotations

import io
import json
import math
import wave
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.testing

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from providers.sim.server import SimServer

PATH = "/v1/audio/pipelines"
STT, LLM, TTS = "gpt-4o-mini-transcribe", "gpt-4o", "tts-1-hd"  # voice-agent-premium's
T_S, LLM_DELAY_S, WORDS_PER_S, B_S = 0.300, 0.250, 10, 0.120
A_S = LLM_DELAY_S + 2 / WORDS_PER_S  # "Of", " course.", " I": the sentence is complete
ANSWER = "Of course. I booked a table for two tomorrow at seven. Anything else?"


def tone_wav(seconds: float = 1.0) -> bytes:
    """A second of a 440 Hz tone (the simulator hears what it is scripted to hear)."""
    rate = 16_000
    samples = bytearray()
    for n in range(int(rate * seconds)):
        value = int(8000 * math.sin(2 * math.pi * 440 * n / rate))
        samples += value.to_bytes(2, "little", signed=True)
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(bytes(samples))
    return out.getvalue()


IDLE_S = 0.5  # real seconds: ten times what a thread step takes on a loaded machine


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=IDLE_S)


def script(sim: SimServer, tts: Fault | None = None) -> None:
    sim.transcripts.append("Book a table for two tomorrow at seven.")
    sim.replies.append(ANSWER)
    sim.faults.add(Fault(model=STT, delay_ms=int(T_S * 1000)))
    sim.faults.add(Fault(model=LLM, delay_ms=int(LLM_DELAY_S * 1000)))
    sim.config = attrs.evolve(sim.config, tokens_per_second=WORDS_PER_S)
    sim.faults.add(tts or Fault(model=TTS, delay_ms=int(B_S * 1000)))


async def timed_events(
    http: httpx.AsyncClient, *, until: str | None = None, template: str = "voice-agent-premium"
) -> list[tuple[float, dict[str, Any]]]:
    """The streamed events with the virtual time each reached the client; stops (and
    leaves) at the first event of type `until`."""
    timed: list[tuple[float, dict[str, Any]]] = []
    files = {"audio": ("turn.wav", tone_wav(), "audio/wav")}
    data = {"template": template, "stream": "true"}
    async with http.stream("POST", PATH, files=files, data=data, timeout=60) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line:
                continue
            event = json.loads(line)
            timed.append((trio.current_time(), event))
            if event["type"] == until:
                break
    return timed


def first(timed: list[tuple[float, dict[str, Any]]], kind: str) -> float:
    return next(at for at, event in timed if event["type"] == kind)


async def test_the_first_audio_reaches_the_client_a_plus_b_after_the_transcript(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    assert gateway.sim is not None
    script(gateway.sim)
    timed = await timed_events(http)
    final = first(timed, "transcription.final")
    assert first(timed, "llm.token") - final == pytest.approx(LLM_DELAY_S, abs=1e-9)
    assert first(timed, "audio.chunk") - final == pytest.approx(A_S + B_S, abs=1e-9)
    words = len(ANSWER.split())
    assert first(timed, "llm.done") - final == pytest.approx(
        LLM_DELAY_S + (words - 1) / WORDS_PER_S, abs=1e-9
    )
    assert first(timed, "audio.chunk") < first(timed, "llm.done")
    assert timed[-1][1]["type"] == "done"
    assert gateway.sim.stats.open_requests == 0


async def test_a_client_that_leaves_closes_every_upstream_request(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    assert gateway.sim is not None
    sim = gateway.sim
    # Speech stalls after its first piece: the first sentence's synthesis is still open.
    script(sim, Fault(model=TTS, delay_ms=int(B_S * 1000), stop_after_chunks=1, stall_ms=60_000))
    timed = await timed_events(http, until="audio.chunk")
    assert timed[-1][1]["type"] == "audio.chunk"
    assert sim.stats.open_requests >= 2  # the model's stream and the first sentence's speech
    await trio.sleep(0.01)  # virtual: the stall would end in 60 s, the model in 1.3 s
    assert sim.stats.open_requests == 0
    assert sim.stats.client_disconnects >= 2
