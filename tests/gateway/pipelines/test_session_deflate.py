"""Issue 35: a voice session whose client negotiated permessage-deflate (browsers always do;
the `websockets` package does by default) survives barge-ins and `response.cancel`s.

A send cancelled between compressing a frame and writing it desynchronised the
compression state, and every later message arrived as garbage. The client here is the
`websockets` package's own, in a thread, over a real socket: each of its messages must
decompress and be a JSON event.
"""

from __future__ import annotations

import base64
import json
from functools import partial
from typing import Any

import httpx
import trio
from websockets.sync.client import ClientConnection, connect

from gateway.app.server import RunningGateway
from providers.audio_codec import decode
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.pipelines.test_pipelines_api import sim_of, spoken_wav
from tests.gateway.pipelines.test_session_ws import ws_url

INTERRUPTIONS = 50
ANSWER = " ".join(f"Sentence number {n} of a long answer that goes on." for n in range(30))


def _send_audio(ws: ClientConnection, pcm: bytes) -> None:
    for start in range(0, len(pcm), 6400):
        chunk = base64.b64encode(pcm[start : start + 6400]).decode()
        ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))


def _until(ws: ClientConnection, kind: str, seen: list[dict[str, Any]]) -> dict[str, Any]:
    while True:
        try:
            raw = ws.recv(timeout=60)
        except TimeoutError:
            raise AssertionError(f"no {kind} after {[m['type'] for m in seen[-8:]]}") from None
        assert isinstance(raw, str)
        message: dict[str, Any] = json.loads(raw)  # garbage fails here
        assert isinstance(message.get("type"), str)
        seen.append(message)
        if message["type"] == kind:
            return message


def _interrupt_fifty_times(url: str, turn: bytes) -> list[dict[str, Any]]:
    """Speak a turn, and once its answer's audio flows interrupt it: by speaking again
    (barge-in, which is also the next turn) or by `response.cancel`, in turn."""
    seen: list[dict[str, Any]] = []
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with connect(url, additional_headers=headers, max_size=None) as ws:
        assert ws.response is not None
        assert ws.response.headers.get("sec-websocket-extensions", "").startswith(
            "permessage-deflate"
        )
        _send_audio(ws, turn)
        for n in range(INTERRUPTIONS):
            _until(ws, "response.audio.delta", seen)
            if n % 2:
                ws.send(json.dumps({"type": "response.cancel"}))
                assert _until(ws, "response.done", seen)["status"] == "cancelled"
                _send_audio(ws, turn)
            else:
                _send_audio(ws, turn)  # speech over the answer
                assert _until(ws, "response.done", seen)["status"] == "cancelled"
    return seen


async def test_a_deflate_client_survives_fifty_interruptions(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    sim.replies.extend([ANSWER] * (INTERRUPTIONS + 1))
    speech = decode(await spoken_wav(http, "Tell me more."), rate=16_000).samples
    turn = speech + bytes(16_000 * 2)  # a second of silence ends it
    url = ws_url(gateway, "?template=voice-agent-premium")
    with trio.fail_after(300):
        seen = await trio.to_thread.run_sync(
            partial(_interrupt_fifty_times, url, turn), abandon_on_cancel=True
        )
    kinds = [m["type"] for m in seen]
    assert kinds.count("response.done") == INTERRUPTIONS
    assert kinds.count("response.audio.delta") >= INTERRUPTIONS
