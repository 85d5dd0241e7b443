"""A voice session's transcription prompt (`/v1/audio/sessions`, `session.update` with
`stt: {prompt}`), over a real WebSocket: it reaches the speech-to-text model's request as
the Realtime sessions' `audio.input.transcription.prompt` does, survives a change of
template, and a malformed one is refused with an `error` event that changes nothing."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from gateway.app.server import RunningGateway
from providers.audio_codec import decode
from tests.gateway.pipelines.test_pipelines_api import SPOKEN, sim_of, spoken_wav
from tests.gateway.pipelines.test_session_ws import AUTH, ws_url

PROMPT = "Names: Ada Lovelace, Thursday."
GEMINI = "gemini-2.5-flash-transcribe"  # recognises a whole turn over HTTP: its body is seen


async def gemini_template(http: httpx.AsyncClient, name: str, stt: str = GEMINI) -> None:
    response = await http.post(
        "/v1/management/pipeline-templates",
        json={
            "name": name,
            "stt": {"model": stt, "language": "en"},
            "llm": {"model": "gpt-4o-mini", "system_prompt": "Be brief.", "max_tokens": 60},
            "tts": {"model": "local-espeak-ng", "voice": "friendly"},
        },
    )
    assert response.status_code == 201, response.text


async def next_of(ws: WebSocketConnection, *kinds: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = json.loads(await ws.get_message())
        if message["type"] in kinds:
            return message


async def update(ws: WebSocketConnection, session: dict[str, Any]) -> dict[str, Any]:
    await ws.send_message(json.dumps({"type": "session.update", "session": session}))
    return await next_of(ws, "session.updated", "error")


async def one_turn(ws: WebSocketConnection, pcm: bytes) -> None:
    for start in range(0, len(pcm), 6400):  # 200 ms a message, as a microphone would
        chunk = base64.b64encode(pcm[start : start + 6400]).decode()
        await ws.send_message(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
    await next_of(ws, "transcription.final")
    await next_of(ws, "response.done")


def prompted(gateway: RunningGateway) -> list[bytes]:
    """The bodies of the speech-to-text requests the simulators received with the prompt."""
    return [
        r.raw for r in sim_of(gateway).requests if r.raw is not None and PROMPT.encode() in r.raw
    ]


async def test_the_transcription_prompt_reaches_the_speech_to_text_model(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    for name in ("heard-1", "heard-2"):
        await gemini_template(http, name)
    await gemini_template(http, "diarized", "gpt-4o-transcribe-diarize")
    pcm = decode(await spoken_wav(http, SPOKEN), rate=16_000).samples + bytes(16_000 * 2)
    with trio.fail_after(120):
        url = ws_url(gateway, "?template=heard-1")
        async with open_websocket_url(url, extra_headers=AUTH) as ws:
            created = await next_of(ws, "session.created")
            assert "stt" not in created["session"]
            updated = await update(ws, {"stt": {"prompt": PROMPT}})
            assert updated["session"]["stt"] == {"prompt": PROMPT}
            await one_turn(ws, pcm)
            assert len(prompted(gateway)) == 1
            # A template whose model takes no prompt is refused; another keeps the prompt.
            refused = await update(ws, {"template": "diarized"})
            assert refused["type"] == "error" and "'prompt'" in refused["error"]["message"]
            updated = await update(ws, {"template": "heard-2"})
            assert updated["session"]["stt"] == {"prompt": PROMPT}
            await one_turn(ws, pcm)
            assert len(prompted(gateway)) == 2
            updated = await update(ws, {"stt": {"prompt": None}})
            assert "stt" not in updated["session"]
            await one_turn(ws, pcm)
            assert len(prompted(gateway)) == 2


async def test_a_malformed_transcription_prompt_is_refused(gateway: RunningGateway) -> None:
    with trio.fail_after(60):
        async with open_websocket_url(ws_url(gateway, ""), extra_headers=AUTH) as ws:
            await next_of(ws, "session.created")
            for stt in ({"prompt": 5}, "names", {"prompt": "x", "language": "en"}):
                refused = await update(ws, {"stt": stt, "vad": False})
                assert refused["type"] == "error", refused
                assert refused["error"]["code"] == "invalid_event"
                assert "session.stt" in refused["error"]["message"]
            updated = await update(ws, {"stt": {"prompt": PROMPT}})
            assert updated["session"]["vad"] is True  # the refused updates changed nothing
