"""`GET /v1/realtime` with the voice frameworks our users build on, unchanged but for the
base URL and key: Pipecat's `OpenAIRealtimeLLMService`, LiveKit's
`realtime.RealtimeModel` and `openai.STT(use_realtime=True)`. Each holds a conversation of
two spoken turns with a function call and a barge-in followed by
`conversation.item.truncate`, against the simulators and the local speech engine.

The frameworks pin protobuf and soundfile older than the gateway's, so they live in
their own virtual environment (`make voice-clients`: `.venv-voice`, or the interpreter
named by `GATEWAY_VOICE_PYTHON`); each client runs there as a script of
`tests/voice_clients/` and writes what it saw to a JSON file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from gateway.app.server import RunningGateway
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.speech import FIRST, INTERRUPTION, SECOND, spoken_pcm, ws_base

REPO = Path(__file__).resolve().parents[3]
CLIENTS = REPO / "tests" / "voice_clients"
VOICE_PYTHON = Path(os.environ.get("GATEWAY_VOICE_PYTHON", REPO / ".venv-voice" / "bin" / "python"))
pytestmark = pytest.mark.skipif(
    not VOICE_PYTHON.exists(), reason="the voice clients' venv is missing: make voice-clients"
)
TOLERATED = {"response_cancel_not_active", "conversation_already_has_active_response"}
LONG_ANSWER = " ".join(f"In Paris it is sunny, sentence {n} of a long forecast." for n in range(40))


async def run_client(
    script: str, gateway: RunningGateway, http: httpx.AsyncClient, folder: Path
) -> dict[str, Any]:
    sim = sim_of(gateway)
    sim.transcripts.extend([FIRST, INTERRUPTION, SECOND, SECOND])  # the last: LiveKit's STT
    sim.replies.extend([LONG_ANSWER, "Of course.", "You are welcome. Goodbye."])
    for name, text in (("first", FIRST), ("interruption", INTERRUPTION), ("second", SECOND)):
        (folder / f"{name}.pcm").write_bytes(await spoken_pcm(http, text))
    out = folder / "events.json"
    command = [str(VOICE_PYTHON), str(CLIENTS / script), ws_base(gateway), ADMIN_KEY]
    with trio.fail_after(240):
        done = await trio.run_process(
            [*command, str(folder), str(out)], capture_stdout=True, capture_stderr=True, check=False
        )
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    seen: dict[str, Any] = json.loads(out.read_text())
    return seen


def check_conversation(
    server: list[dict[str, Any]], client: list[dict[str, Any]], transport: str = "cascade"
) -> None:
    """Two spoken turns (and the interruption's), a function call answered by the
    client, a barge-in cancelling the answer, the client's truncate. The input's
    transcription comes from the cascade always, from OpenAI when the client asked."""
    assert all(isinstance(e.get("event_id"), str) for e in server)
    errors = [e["error"]["code"] for e in server if e["type"] == "error"]
    assert set(errors) <= TOLERATED  # a client's cancel may cross the server's own
    heard = [e["transcript"] for e in server if e["type"].endswith("transcription.completed")]
    if transport == "cascade" or _asked_transcription(client):
        assert heard[:1] == [FIRST] and SECOND in heard
    else:
        assert heard == []
    calls = [e for e in server if e["type"] == "response.function_call_arguments.done"]
    outputs = [
        c["item"]
        for c in client
        if c["type"] == "conversation.item.create" and c["item"]["type"] == "function_call_output"
    ]
    assert calls and outputs and outputs[0]["call_id"] == calls[0]["call_id"]
    statuses = [e["response"]["status"] for e in server if e["type"] == "response.done"]
    assert "cancelled" in statuses and statuses[-1] == "completed"
    truncates = [c for c in client if c["type"] == "conversation.item.truncate"]
    truncated = [e for e in server if e["type"] == "conversation.item.truncated"]
    assert truncates and truncated and truncated[0]["item_id"] == truncates[0]["item_id"]


# The gateway's cascade, or the OpenAI provider's `realtime_transport: native`: the
# session relayed to the simulator's Realtime API (`gateway.realtime.native`).
TRANSPORTS = pytest.mark.parametrize("transport", ["cascade", "native"])


async def use_transport(http: httpx.AsyncClient, transport: str) -> None:
    settings = {"realtime_transport": transport}
    response = await http.patch("/v1/management/providers/openai", json={"settings": settings})
    assert response.status_code == 200, response.text


def _asked_transcription(client: list[dict[str, Any]]) -> bool:
    updates = [c["session"] for c in client if c["type"] == "session.update"]
    return any(((u.get("audio") or {}).get("input") or {}).get("transcription") for u in updates)


@TRANSPORTS
async def test_pipecat_realtime_service(
    gateway: RunningGateway, http: httpx.AsyncClient, tmp_path: Path, transport: str
) -> None:
    await use_transport(http, transport)
    seen = await run_client("pipecat_conversation.py", gateway, http, tmp_path)
    check_conversation(seen["server"], seen["client"], transport)


@TRANSPORTS
async def test_livekit_realtime_model_and_realtime_stt(
    gateway: RunningGateway, http: httpx.AsyncClient, tmp_path: Path, transport: str
) -> None:
    await use_transport(http, transport)
    seen = await run_client("livekit_conversation.py", gateway, http, tmp_path)
    check_conversation(seen["server"], seen["client"], transport)
    created = [c for c in seen["client"] if c["type"] == "response.create"]
    assert all("client_event_id" in c["response"]["metadata"] for c in created)
    assert seen["stt"] == [SECOND]
