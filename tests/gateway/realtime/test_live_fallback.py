"""Recognition while the user speaks, through the engine with the simulators: a
recogniser that fails before its first partial falls back to the next candidate of the
plan, which hears the whole turn; one that breaks after a partial fails the turn's
transcription clearly (`...transcription.failed`), and the session goes on."""

from __future__ import annotations

import json
from typing import Any

import httpx
from websockets.sync.client import connect

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.speech import FIRST, chunks, spoken_pcm, ws_base
from tests.gateway.realtime.test_realtime_ws import BEARER, in_thread
from tests.gateway.test_files_usage import usage_rows

STT = "gpt-4o-mini-transcribe"  # its plan: then voxtral-mini-latest (batch), whisper-1
PREFIX = "conversation.item.input_audio_transcription."


def one_turn(url: str, pcm: bytes, model: str = STT) -> list[dict[str, Any]]:
    """A transcription session's one spoken turn, until its transcription ends."""
    with connect(url + f"?intent=transcription&model={model}", additional_headers=BEARER) as ws:
        events: list[dict[str, Any]] = []
        for piece in chunks(pcm):
            ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": piece}))
        while not events or events[-1]["type"] not in (PREFIX + "completed", PREFIX + "failed"):
            events.append(json.loads(ws.recv(timeout=60)))
        return events


async def test_a_recogniser_that_fails_before_its_first_partial_falls_back(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    sim.faults.add(Fault(model=STT, status=503))
    sim.transcripts.extend([FIRST, FIRST])  # the failed attempt takes one at its commit
    events = await in_thread(one_turn, ws_base(gateway), await spoken_pcm(http, FIRST))
    completed = [e for e in events if e["type"] == PREFIX + "completed"]
    assert [e["transcript"] for e in completed] == [FIRST]
    rows = [r for r in await usage_rows(gateway) if r["endpoint"] == "realtime"]
    assert [(r["provider"], r["status"]) for r in rows] == [("mistral", 200)]
    tried = [(r.vendor, r.path.split("?")[0]) for r in sim.requests]
    assert tried == [("openai", "/v1/realtime"), ("mistral", "/v1/audio/transcriptions")]


async def test_a_recogniser_that_breaks_after_a_partial_fails_the_turn(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    sim.faults.add(Fault(model=STT, stop_after_chunks=1))
    sim.transcripts.append(FIRST)
    events = await in_thread(one_turn, ws_base(gateway), await spoken_pcm(http, FIRST))
    kinds = [e["type"] for e in events]
    assert kinds.count(PREFIX + "delta") == 1
    failed = events[-1]
    assert failed["type"] == PREFIX + "failed" and failed["error"]["code"] == "provider_error"
    assert PREFIX + "completed" not in kinds
    assert [(r.vendor, r.path.split("?")[0]) for r in sim.requests] == [("openai", "/v1/realtime")]
