"""Spoken turns for the Realtime tests, made by the gateway's own local synthesiser
(eSpeak NG), and a way to run an asyncio client (the `openai` package's realtime
connection, Pipecat, LiveKit) beside the trio gateway: in a thread with its own loop."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

import httpx
import trio

from gateway.app.server import RunningGateway
from providers.audio_codec import decode
from tests.gateway.pipelines.test_pipelines_api import spoken_wav

T = TypeVar("T")
FIRST = "What is the weather like in Paris today?"
SECOND = "Thank you, that is all I wanted to know."
INTERRUPTION = "Wait, stop please."


async def spoken_pcm(http: httpx.AsyncClient, text: str, rate: int = 24_000) -> bytes:
    """`text` spoken, as PCM16 mono at `rate`, followed by a second of silence (which
    ends the turn for server VAD)."""
    speech = decode(await spoken_wav(http, text), rate=rate).samples
    return speech + bytes(rate * 2)


def chunks(pcm: bytes, rate: int = 24_000, ms: int = 100) -> list[str]:
    """`pcm` as the base64 pieces a microphone client appends."""
    size = rate * 2 * ms // 1000
    return [base64.b64encode(pcm[i : i + size]).decode() for i in range(0, len(pcm), size)]


async def in_asyncio(
    script: Callable[..., Coroutine[Any, Any, T]], *args: Any, limit_s: float = 180
) -> T:
    """Run an asyncio `script` in a thread while the trio gateway serves."""
    with trio.fail_after(limit_s):
        return await trio.to_thread.run_sync(
            partial(asyncio.run, script(*args)), abandon_on_cancel=True
        )


def ws_base(gateway: RunningGateway) -> str:
    return gateway.url.replace("http://", "ws://") + "/v1/realtime"
