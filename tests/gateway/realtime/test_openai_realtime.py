"""`GET /v1/realtime` with the official `openai` package's `client.realtime.connect`,
unchanged but for the base URL and key: two spoken turns, a function call round trip,
a barge-in and a `conversation.item.truncate`, over the simulators' vendors and the
local speech engines."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import openai
from openai.resources.realtime.realtime import AsyncRealtimeConnection

from gateway.app.server import RunningGateway
from providers.sim.server import SimServer
from tests.gateway.audio.test_local_audio_api import overlap
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.speech import (
    FIRST,
    INTERRUPTION,
    SECOND,
    chunks,
    in_asyncio,
    spoken_pcm,
)

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
LONG_ANSWER = " ".join(f"In Paris it is sunny, sentence {n} of a long forecast." for n in range(40))
SHORT_ANSWER = "You are welcome. Goodbye."


class Recorder:
    def __init__(self, connection: AsyncRealtimeConnection) -> None:
        self.connection = connection
        self.events: list[dict[str, Any]] = []

    async def until(self, kind: str) -> dict[str, Any]:
        while True:
            event = (await self.connection.recv()).model_dump(exclude_unset=True)
            assert "event_id" in event, event
            self.events.append(event)
            if event["type"] == "error":
                raise AssertionError(event)
            if event["type"] == kind:
                return event

    async def until_seen(self, kind: str, count: int) -> None:
        """Until `count` events of `kind` came in all (some may have come already: a
        fast upstream answers while the client is still busy with what came before)."""
        while sum(e["type"] == kind for e in self.events) < count:
            await self.until(kind)

    async def speak(self, pcm: bytes) -> None:
        for piece in chunks(pcm):
            await self.connection.input_audio_buffer.append(audio=piece)


async def conversation(base_url: str, turns: list[bytes]) -> list[dict[str, Any]]:
    first, interruption, second = turns
    client = openai.AsyncOpenAI(base_url=base_url, api_key=ADMIN_KEY)
    async with client.realtime.connect(model="gpt-realtime") as connection:
        talk = Recorder(connection)
        await talk.until("session.created")
        await connection.session.update(
            session={
                "type": "realtime",
                "instructions": "You are a weather assistant.",
                "output_modalities": ["audio"],
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": 24000},
                        "transcription": {"model": "gpt-4o-mini-transcribe"},
                        "turn_detection": {"type": "server_vad"},
                    },
                    "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin"},
                },
                "tools": [WEATHER],
            }
        )
        await talk.until("session.updated")
        await talk.speak(first)  # turn 1: the model calls get_weather
        done = await talk.until("response.done")
        call = done["response"]["output"][0]
        assert call["type"] == "function_call" and call["name"] == "get_weather"
        await connection.session.update(session={"type": "realtime", "tools": []})
        await connection.conversation.item.create(
            item={
                "type": "function_call_output",
                "call_id": call["call_id"],
                "output": json.dumps({"forecast": "sunny", "celsius": 21}),
            }
        )
        await connection.response.create()
        await talk.until("response.output_audio.delta")
        await talk.until("response.output_audio.delta")
        await talk.speak(interruption)  # barge-in, then the user's second turn
        cancelled = await talk.until("response.done")
        spoken_id = cancelled["response"]["output"][0]["id"]
        await connection.conversation.item.truncate(
            item_id=spoken_id, content_index=0, audio_end_ms=300
        )
        await talk.until("conversation.item.truncated")
        await connection.conversation.item.retrieve(item_id=spoken_id)
        await talk.until("conversation.item.retrieved")
        await talk.until_seen("response.done", 3)  # the answer to the interruption
        await talk.speak(second)  # turn 2
        await talk.until("response.done")
        return talk.events


async def scripted_conversation(
    sim: SimServer, http: httpx.AsyncClient, base_url: str
) -> list[dict[str, Any]]:
    """The simulators scripted for `conversation` (what is heard, what is answered), and
    the conversation held at `base_url`: its events."""
    sim.transcripts.extend([FIRST, INTERRUPTION, SECOND])
    sim.replies.extend([LONG_ANSWER, "Of course.", SHORT_ANSWER])
    turns = [await spoken_pcm(http, t) for t in (FIRST, INTERRUPTION, SECOND)]
    return await in_asyncio(conversation, base_url, turns)


def assert_the_whole_conversation(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What every server holding `conversation` must have said (whoever answers: the
    cascade, the relay, the simulator itself); the four `response.done` responses."""
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["session.created", "session.updated"]
    transcripts = [e for e in events if e["type"].endswith("input_audio_transcription.completed")]
    assert [t["transcript"] for t in transcripts] == [FIRST, INTERRUPTION, SECOND]
    done = [e["response"] for e in events if e["type"] == "response.done"]
    assert [d["status"] for d in done] == ["completed", "cancelled", "completed", "completed"]
    assert done[1]["status_details"]["reason"] == "turn_detected"
    assert done[0]["output"][0]["type"] == "function_call"
    assert isinstance(json.loads(done[0]["output"][0]["arguments"])["city"], str)
    assert all(d["usage"]["output_tokens"] > 0 for d in (done[0], done[2], done[3]))
    retrieved = next(e for e in events if e["type"] == "conversation.item.retrieved")["item"]
    kept = retrieved["content"][0]["transcript"]
    assert kept and LONG_ANSWER.startswith(kept) and len(kept) < len(LONG_ANSWER) / 4
    assert done[3]["output"][0]["content"][0]["transcript"] == SHORT_ANSWER
    return done


async def test_a_conversation_with_the_openai_client(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    events = await scripted_conversation(sim_of(gateway), http, gateway.url + "/v1")
    assert_the_whole_conversation(events)
    updated = events[1]["session"]
    assert updated["audio"]["output"]["voice"] == "marin"
    assert updated["tools"][0]["name"] == "get_weather"
    kinds = [e["type"] for e in events]
    transcripts = [e for e in events if e["type"].endswith("input_audio_transcription.completed")]
    audio = b"".join(
        base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta"
    )
    assert len(audio) % 2 == 0 and len(audio) / 2 / 24_000 > 1.0
    assert "rate_limits.updated" in kinds
    assert overlap(SECOND, transcripts[2]["transcript"]) == 1.0
