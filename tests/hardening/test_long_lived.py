"""Long-lived traffic is legitimate: a WebSocket voice session and a streamed answer run
for several times every connection limit (head, keep-alive, upload grace) and are not
cut by any of them."""

from __future__ import annotations

import json
from functools import partial

import attrs
import openai
import trio
from trio_websocket import open_websocket_url

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY

LIMIT_S = 1.0
OUTLIVE_S = 3 * LIMIT_S


def _tight(settings: Settings, **more: float) -> Settings:
    return attrs.evolve(
        settings,
        header_timeout_s=LIMIT_S,
        keep_alive_timeout_s=LIMIT_S,
        upload_rate_grace_s=LIMIT_S,
        min_upload_rate_bytes_s=1000.0,
        **more,
    )


async def test_a_quiet_voice_session_outlives_every_connection_limit(
    nursery: trio.Nursery, settings: Settings
) -> None:
    gateway: RunningGateway = await nursery.start(partial(run_gateway, _tight(settings), env={}))
    url = gateway.url.replace("http://", "ws://") + "/v1/audio/sessions"
    headers = [(b"authorization", f"Bearer {ADMIN_KEY}".encode())]
    async with open_websocket_url(url, extra_headers=headers) as ws:
        assert json.loads(await ws.get_message())["type"] == "session.created"
        await trio.sleep(OUTLIVE_S)  # nothing said for three times every limit
        update = {"type": "session.update", "session": {"template": "voice-agent-premium"}}
        await ws.send_message(json.dumps(update))
        assert json.loads(await ws.get_message())["type"] == "session.updated"


async def test_a_slow_stream_outlives_every_connection_limit(
    nursery: trio.Nursery, settings: Settings
) -> None:
    slow = _tight(settings, sim_tokens_per_second=10.0)
    gateway: RunningGateway = await nursery.start(partial(run_gateway, slow, env={}))
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=ADMIN_KEY, max_retries=0
    ) as client:
        started = trio.current_time()
        stream = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "tell me a long story"}],
            max_tokens=40,
            stream=True,
        )
        finish = None
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
    assert finish == "length"
    assert trio.current_time() - started > OUTLIVE_S  # it did run past every limit
