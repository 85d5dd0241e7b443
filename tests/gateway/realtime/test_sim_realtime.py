"""The OpenAI simulator's Realtime API, held to the official `openai` client: the same
conversation the gateway's own `/v1/realtime` is tested with (two spoken turns, a
function call, a barge-in and a truncate), straight against the simulator; and its
refusals (no key, a model that is not a realtime one)."""

from __future__ import annotations

import json

import httpx

from gateway.app.server import RunningGateway
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.speech import FIRST, INTERRUPTION, SECOND, in_asyncio, spoken_pcm
from tests.gateway.realtime.test_openai_realtime import LONG_ANSWER, SHORT_ANSWER, conversation


async def test_the_openai_client_holds_a_conversation_with_the_simulator(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    sim.transcripts.extend([FIRST, INTERRUPTION, SECOND])
    sim.replies.extend([LONG_ANSWER, "Of course.", SHORT_ANSWER])
    turns = [await spoken_pcm(http, t) for t in (FIRST, INTERRUPTION, SECOND)]
    events = await in_asyncio(conversation, sim.base_url("openai") + "/v1", turns)

    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["session.created", "session.updated"]
    transcripts = [e for e in events if e["type"].endswith("input_audio_transcription.completed")]
    assert [t["transcript"] for t in transcripts] == [FIRST, INTERRUPTION, SECOND]
    done = [e["response"] for e in events if e["type"] == "response.done"]
    assert [d["status"] for d in done] == ["completed", "cancelled", "completed", "completed"]
    assert done[1]["status_details"]["reason"] == "turn_detected"
    assert done[0]["output"][0]["type"] == "function_call"
    assert isinstance(json.loads(done[0]["output"][0]["arguments"])["city"], str)
    retrieved = next(e for e in events if e["type"] == "conversation.item.retrieved")["item"]
    kept = retrieved["content"][0]["transcript"]
    assert kept and LONG_ANSWER.startswith(kept) and len(kept) < len(LONG_ANSWER) / 4
    assert done[3]["output"][0]["content"][0]["transcript"] == SHORT_ANSWER
    assert all(d["usage"]["output_tokens"] > 0 for d in (done[0], done[2], done[3]))
