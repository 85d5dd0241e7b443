"""Mistral's realtime transcription model, `voxtral-mini-transcribe-realtime-2602`, through
the gateway with the official `openai` client: a file on `POST /v1/audio/transcriptions`
goes through Mistral's realtime socket (the vendor's batch endpoint does not serve the
model), whole and streamed, metered per audio minute at the catalog's price; and a
transcription session on `GET /v1/realtime` is recognised by it while the user speaks."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.audio_codec import Pcm, encode
from providers.sim.core import Fault
from providers.sim.server import SimServer
from tests.gateway.realtime.speech import FIRST, spoken_pcm, ws_base
from tests.gateway.realtime.test_live_fallback import PREFIX, one_turn
from tests.gateway.realtime.test_realtime_ws import in_thread

MODEL = "voxtral-mini-transcribe-realtime-2602"
PRICE_PER_MINUTE = 0.006
TWO_SECONDS = Pcm(b"\0\0" * 24_000 * 2, 24_000)
LIVE = "/v1/audio/transcriptions/realtime"


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


def mistral_paths(sim: SimServer) -> list[str]:
    return [r.path.split("?")[0] for r in sim.requests if r.vendor == "mistral"]


async def last_usage(gateway: RunningGateway) -> dict[str, Any]:
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT endpoint, provider, model, status, audio_seconds, cost_usd "
                "FROM usage_records ORDER BY created_epoch"
            )
        )
    )
    return rows[-1]


async def test_the_model_is_in_the_catalog_with_its_price(client: openai.AsyncOpenAI) -> None:
    found = await client.models.retrieve(MODEL)
    service: dict[str, Any] = found.model_extra["service"]  # type: ignore[index]
    assert service["provider"] == "mistral"
    assert "transcription" in service["capabilities"]
    assert service["pricing"]["unit"] == "minute"
    assert service["pricing"]["unit_price"] == PRICE_PER_MINUTE


@pytest.mark.parametrize("container", ["wav", "mp3"])
async def test_a_file_is_transcribed_through_the_realtime_socket(
    gateway: RunningGateway, client: openai.AsyncOpenAI, container: str
) -> None:
    sim = sim_of(gateway)
    sim.transcripts.append(FIRST)
    audio = encode(TWO_SECONDS, container)  # type: ignore[arg-type]
    answer = await client.audio.transcriptions.create(
        model=MODEL, file=(f"a.{container}", audio), response_format="verbose_json"
    )
    assert answer.text == FIRST
    assert answer.duration == pytest.approx(2.0, abs=0.05)
    assert mistral_paths(sim) == [LIVE]  # never the batch endpoint
    row = await last_usage(gateway)
    assert (row["endpoint"], row["provider"], row["model"], row["status"]) == (
        "audio.transcriptions",
        "mistral",
        MODEL,
        200,
    )
    assert row["audio_seconds"] == pytest.approx(2.0, abs=0.05)
    assert row["cost_usd"] == pytest.approx(row["audio_seconds"] / 60 * PRICE_PER_MINUTE)


async def test_a_streamed_file_relays_the_socket_s_words_as_they_come(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim = sim_of(gateway)
    sim.transcripts.append(FIRST)
    stream = await client.audio.transcriptions.create(
        model=MODEL, file=("a.wav", encode(TWO_SECONDS, "wav")), stream=True
    )
    events = [event async for event in stream]
    deltas = [e.delta for e in events if e.type == "transcript.text.delta"]
    assert len(deltas) == len(FIRST.split())  # the socket's words, one event each
    assert events[-1].type == "transcript.text.done"
    assert "".join(deltas) == events[-1].text == FIRST
    assert mistral_paths(sim) == [LIVE]
    row = await last_usage(gateway)
    assert row["model"] == MODEL and row["audio_seconds"] == pytest.approx(2.0, abs=0.05)


async def test_a_transcription_session_is_recognised_live_by_voxtral_realtime(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    sim.transcripts.append(FIRST)
    events = await in_thread(one_turn, ws_base(gateway), await spoken_pcm(http, FIRST), MODEL)
    completed = [e["transcript"] for e in events if e["type"] == PREFIX + "completed"]
    assert completed == [FIRST]
    assert [e for e in events if e["type"] == PREFIX + "delta"]  # partials while speaking
    assert mistral_paths(sim) == [LIVE]
    row = await last_usage(gateway)
    assert (row["endpoint"], row["provider"], row["model"]) == ("realtime", "mistral", MODEL)


async def test_a_refused_realtime_socket_falls_back_to_batch_voxtral(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim = sim_of(gateway)
    sim.faults.add(Fault(model=MODEL, status=503))
    answer = await client.audio.transcriptions.with_raw_response.create(
        model=MODEL, file=("a.wav", encode(TWO_SECONDS, "wav"))
    )
    assert answer.headers["x-service-model"] == "voxtral-mini-latest"
    assert answer.headers["x-service-fallback"] == "true"
    assert mistral_paths(sim) == [LIVE, "/v1/audio/transcriptions"]


@pytest.mark.parametrize("model", [MODEL, "voxtral-mini-latest"])
async def test_an_upstream_cut_mid_stream_ends_with_an_error_event(
    gateway: RunningGateway, client: openai.AsyncOpenAI, model: str
) -> None:
    """Cut after its first word (the realtime socket, or the batch model's event
    stream), the transcription cannot be resumed: the streamed answer, whose head is
    sent, ends with an `error` event instead of a dropped connection, no word is
    repeated, and the usage record says what failed."""
    sim = sim_of(gateway)
    sim.transcripts.append(FIRST)
    sim.faults.add(Fault(model=model, stop_after_chunks=1))
    async with client.audio.transcriptions.with_streaming_response.create(
        model=model, file=("a.wav", encode(TWO_SECONDS, "wav")), stream=True
    ) as response:
        events = [json.loads(line[6:]) async for line in response.iter_lines() if line]
    assert [e["type"] for e in events] == ["transcript.text.delta", "error"]
    assert events[-1]["error"]["code"] == "provider_error"
    row = await last_usage(gateway)
    assert (row["model"], row["status"]) == (model, 502)
