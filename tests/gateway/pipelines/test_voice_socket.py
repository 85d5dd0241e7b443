"""A voice pipeline speaking its answer over ONE ElevenLabs stream-input socket, through
the gateway's HTTP interface and the simulator, on one virtual clock.

With the provider setting `speech_transport: "websocket"`, `voice-agent-fast` (speech
by `eleven_flash_v2_5`) opens one socket when the answer starts and sends each sentence
as the model completes it: the simulator sees one socket and no HTTP synthesis, the
first audio reaches the client as soon as the first sentence is spoken (exactly `A_S`
after the transcript, the simulator speaking at once), before the model has finished;
the answer's characters are metered once. A client that leaves closes the socket at
once; a refused socket falls back to the next candidate; a socket that goes silent
meets the idle deadline; a dropped one ends the stream with the error event.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.testing
from trio_websocket import open_websocket_url

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from providers.audio_codec import decode
from providers.sim.core import Fault
from providers.sim.server import SimServer
from tests.gateway.audio.test_elevenlabs_socket import sim_of, use_the_socket
from tests.gateway.pipelines.test_pipelines_api import SPOKEN, spoken_wav
from tests.gateway.pipelines.test_session_ws import (
    AUTH,
    append,
    only_the_new_turn_listened_to,
    ws_url,
)
from tests.gateway.pipelines.test_sim_times import IDLE_S
from tests.gateway.pipelines.test_sim_times import timed_events as sim_timed_events

PATH = "/v1/audio/pipelines"
STT, LLM, TTS = "gpt-4o-mini-transcribe", "gpt-4o-mini", "eleven_flash_v2_5"
SOCKET_PATH = "/elevenlabs/v1/text-to-speech/{voice_id}/stream-input"
HTTP_TTS_PATHS = ("/elevenlabs/v1/text-to-speech/{voice_id}/stream", "/openai/v1/audio/speech")
T_S, LLM_DELAY_S, WORDS_PER_S = 0.300, 0.250, 10
A_S = LLM_DELAY_S + 2 / WORDS_PER_S  # "Of", " course.", " I": the sentence is complete
ANSWER = "Of course. I booked a table for two tomorrow at seven. Anything else?"
SHORT_ANSWER = "Of course. Anything else?"  # the paced test's: fewer virtual waits
IDLE_DEADLINE_S = 5.0
FIRST_AUDIO_S = 3.0


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=IDLE_S)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Short deadlines (first audio, idle gaps), for the sockets that go silent."""
    return attrs.evolve(
        settings, upstream_timeout_s=FIRST_AUDIO_S, stream_idle_timeout_s=IDLE_DEADLINE_S
    )


def script(sim: SimServer, *tts_faults: Fault, paced: bool = False) -> None:
    """What recognition hears and the model answers; `paced`: the stages' latencies of
    the module docstring (every virtual wait costs `IDLE_S` of real time, so only the
    test of the timing pays for them)."""
    sim.transcripts.append("Book a table for two tomorrow at seven.")
    sim.replies.append(SHORT_ANSWER if paced else ANSWER)
    if paced:
        sim.faults.add(Fault(model=STT, delay_ms=int(T_S * 1000)))
        sim.faults.add(Fault(model=LLM, delay_ms=int(LLM_DELAY_S * 1000)))
        sim.config = attrs.evolve(sim.config, tokens_per_second=WORDS_PER_S)
    for fault in tts_faults:
        sim.faults.add(fault)


async def timed_events(
    http: httpx.AsyncClient, *, until: str | None = None
) -> list[tuple[float, dict[str, Any]]]:
    """`test_sim_times.timed_events` of `voice-agent-fast` (speech by ElevenLabs)."""
    return await sim_timed_events(http, until=until, template="voice-agent-fast")


def first(timed: list[tuple[float, dict[str, Any]]], kind: str) -> float:
    return next(at for at, event in timed if event["type"] == kind)


def of_type(timed: list[tuple[float, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [event for _, event in timed if event["type"] == kind]


async def test_the_answer_is_spoken_on_one_socket_sentence_by_sentence(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    sim = sim_of(gateway)
    await use_the_socket(http)
    script(sim, paced=True)
    timed = await timed_events(http)

    assert sim.stats.by_path.get(SOCKET_PATH) == 1  # one socket for both sentences
    assert not any(sim.stats.by_path.get(path) for path in HTTP_TTS_PATHS)
    final = first(timed, "transcription.final")
    assert first(timed, "audio.chunk") - final == pytest.approx(A_S, abs=1e-9)
    assert first(timed, "audio.chunk") < first(timed, "llm.done")
    assert not of_type(timed, "error")
    done = timed[-1][1]
    assert done["type"] == "done"
    # each sentence's characters, once (not the space between them)
    assert done["usage"]["tts_characters"] == len(SHORT_ANSWER) - 1
    assert sim.stats.open_requests == 0


async def test_a_client_that_leaves_closes_the_socket_at_once(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    sim = sim_of(gateway)
    await use_the_socket(http)
    # Speech stalls after its first piece: the socket is still open when the client leaves.
    script(sim, Fault(model=TTS, stop_after_chunks=1, stall_ms=60_000))
    timed = await timed_events(http, until="audio.chunk")
    assert timed[-1][1]["type"] == "audio.chunk"
    assert sim.stats.open_requests >= 1  # the socket
    await trio.sleep(0.01)  # virtual: the stall would end in 60 s
    assert sim.stats.open_requests == 0
    assert sim.stats.by_path.get(SOCKET_PATH) == 1
    assert sim.stats.client_disconnects >= 1


async def test_a_refused_socket_falls_back_to_the_next_candidate(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    sim = sim_of(gateway)
    await use_the_socket(http)
    script(sim, Fault(model=TTS, status=503, remaining=1))
    timed = await timed_events(http)

    recoverable = of_type(timed, "error")
    assert len(recoverable) == 1 and recoverable[0]["recoverable"] is True
    assert sim.stats.by_path.get(SOCKET_PATH) == 2  # eleven_flash_v2_5, then turbo
    assert of_type(timed, "audio.chunk")
    assert timed[-1][1]["type"] == "done"
    assert sim.stats.open_requests == 0


async def test_a_socket_dropped_before_any_audio_hands_the_answer_to_one_call_each(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    """The answer's socket is cut before its first audio: a recoverable error event, and
    every sentence is synthesised on its own (here each on its own socket)."""
    sim = sim_of(gateway)
    await use_the_socket(http)
    script(sim, Fault(model=TTS, stop_after_chunks=0, remaining=1))
    timed = await timed_events(http)

    recoverable = of_type(timed, "error")
    assert len(recoverable) == 1 and recoverable[0]["recoverable"] is True
    assert "sentence by sentence" in recoverable[0]["message"]
    assert sim.stats.by_path.get(SOCKET_PATH) == 1 + 3  # the answer's, then one a sentence
    assert of_type(timed, "audio.chunk")
    assert timed[-1][1]["type"] == "done"
    assert sim.stats.open_requests == 0


async def test_a_socket_silent_after_the_first_text_falls_back_at_the_first_audio_deadline(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    sim = sim_of(gateway)
    await use_the_socket(http)
    script(sim, Fault(model=TTS, stop_after_chunks=0, stall_ms=60_000, remaining=1))
    timed = await timed_events(http)

    final = first(timed, "transcription.final")
    recoverable = of_type(timed, "error")
    assert len(recoverable) == 1 and recoverable[0]["recoverable"] is True
    assert str(int(FIRST_AUDIO_S)) in recoverable[0]["message"]
    # the first sentence went out at once (the model is unpaced): audio FIRST_AUDIO_S later
    assert first(timed, "audio.chunk") - final == pytest.approx(FIRST_AUDIO_S, abs=0.01)
    assert timed[-1][1]["type"] == "done"
    assert sim.stats.open_requests == 0


async def test_a_silent_socket_meets_the_idle_deadline(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    sim = sim_of(gateway)
    await use_the_socket(http)
    script(sim, Fault(model=TTS, stop_after_chunks=1, stall_ms=60_000))
    timed = await timed_events(http)

    audio_at = first(timed, "audio.chunk")
    failed = timed[-1]
    assert failed[1]["type"] == "error" and failed[1]["recoverable"] is False
    assert str(int(IDLE_DEADLINE_S)) in failed[1]["message"]
    assert failed[0] - audio_at == pytest.approx(IDLE_DEADLINE_S, abs=0.01)
    assert sim.stats.open_requests == 0


async def test_a_dropped_socket_ends_the_stream_with_the_error_event(
    gateway: RunningGateway, http: httpx.AsyncClient, clock: trio.testing.MockClock
) -> None:
    sim = sim_of(gateway)
    await use_the_socket(http)
    script(sim, Fault(model=TTS, stop_after_chunks=2))
    timed = await timed_events(http)

    assert len(of_type(timed, "audio.chunk")) >= 1
    failed = timed[-1][1]
    assert failed["type"] == "error" and failed["recoverable"] is False
    assert sim.stats.open_requests == 0


async def test_barge_in_closes_the_socket(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    """A voice session on `voice-agent-fast`: user speech while the answer plays cancels
    it, and the simulator sees the answer's one socket closed (real time: the session's
    voice activity detection listens to real speech)."""
    sim = sim_of(gateway)
    await use_the_socket(http)
    sim.transcripts.append(SPOKEN)
    sim.replies.append(ANSWER)
    sim.faults.add(Fault(model=TTS, stop_after_chunks=1, stall_ms=60_000))
    speech = decode(await spoken_wav(http, SPOKEN), rate=16_000).samples
    with trio.fail_after(60):
        url = ws_url(gateway, "?template=voice-agent-fast")
        async with open_websocket_url(url, extra_headers=AUTH) as ws:
            await append(ws, speech + bytes(16_000 * 2))  # a turn, then a second of silence
            await until(ws, "response.audio.delta")
            assert sim.stats.open_requests >= 1  # the stalled socket
            await append(ws, speech)  # the user speaks over the answer
            done = await until(ws, "response.done")
            assert done["status"] == "cancelled"
            await only_the_new_turn_listened_to(sim)
    assert sim.stats.by_path.get(SOCKET_PATH) == 1


async def until(ws: Any, kind: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = json.loads(await ws.get_message())
        if message["type"] == kind:
            return message
