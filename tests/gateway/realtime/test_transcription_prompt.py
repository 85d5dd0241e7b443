"""A Realtime session's transcription `prompt` (`session.update` →
`audio.input.transcription.prompt`), with the official `openai` package's realtime
connection: it reaches the speech-to-text model's form, and a model that takes no prompt
is refused with the session's error event (the session keeps its previous settings)."""

from __future__ import annotations

from typing import Any

import httpx
import openai

from gateway.app.server import RunningGateway
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.speech import FIRST, chunks, in_asyncio, spoken_pcm

PROMPT = "Names: Ada Lovelace, Paris."
GEMINI = "gemini-2.5-flash-transcribe"  # recognises a whole turn over HTTP
PREFIX = "conversation.item.input_audio_transcription."


def _session(model: str) -> dict[str, Any]:
    return {
        "type": "realtime",
        "output_modalities": ["text"],
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": 24000},
                "transcription": {"model": model, "prompt": PROMPT},
                "turn_detection": {"type": "server_vad"},
            }
        },
    }


async def prompted_turn(base_url: str, pcm: bytes) -> list[dict[str, Any]]:
    """A session whose transcription has a prompt (Gemini, which takes one in its
    instruction), one spoken turn, then the same prompt for the diarizing model, which
    takes none."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key=ADMIN_KEY)
    events: list[dict[str, Any]] = []

    async def until(*kinds: str) -> dict[str, Any]:
        while True:
            event = (await connection.recv()).model_dump(exclude_unset=True)
            events.append(event)
            if event["type"] in kinds:
                return event

    async with client.realtime.connect(model="gpt-realtime") as connection:
        await until("session.created")
        await connection.session.update(session=_session(GEMINI))  # type: ignore[arg-type]
        await until("session.updated")
        for piece in chunks(pcm):
            await connection.input_audio_buffer.append(audio=piece)
        await until(PREFIX + "completed")
        await until("response.done")
        diarize: Any = _session("gpt-4o-transcribe-diarize")
        await connection.session.update(session=diarize, event_id="evt_diarize")
        await until("error", "session.updated")
    return events


async def test_the_transcription_prompt_reaches_the_model_or_is_refused(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    sim.transcripts.append(FIRST)
    pcm = await spoken_pcm(http, FIRST)
    events = await in_asyncio(prompted_turn, gateway.url + "/v1", pcm)
    updated = next(e for e in events if e["type"] == "session.updated")["session"]
    assert updated["audio"]["input"]["transcription"]["prompt"] == PROMPT
    [asked] = [r for r in sim.requests if r.vendor == "google"]
    assert asked.raw is not None and PROMPT.encode() in asked.raw
    assert events[-1]["type"] == "error", events[-1]
    error = events[-1]["error"]
    assert error["code"] == "unsupported_parameter" and error["param"] == "session"
    assert "'prompt'" in error["message"], error
    assert error["event_id"] == "evt_diarize"
    assert "gpt-4o-transcribe-diarize" in error["message"]
    assert sum(e["type"] == "session.updated" for e in events) == 1  # the refusal changed nothing
