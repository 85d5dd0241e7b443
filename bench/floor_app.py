"""`python -m bench.floor_app --host H --port P [--stream-body FILE]`: Hypercorn's trio
worker with nothing behind it.

The floor under the gateway's costs: the server the gateway runs on, configured by the
gateway's own `hypercorn_config`, serving an ASGI app that reads the request body and
answers the same bytes as the gateway would, carrying as many headers as a gateway answer
(the rate-limit block, the request id, the model used, energy and carbon). What the
gateway spends beyond this process, per request, is its own work.

- A request whose body asks `"stream":true` gets `--stream-body` (a streamed chat answer
  the gateway gave, its 20 chunks and `[DONE]`, captured by the bench) as an event
  stream, written in one body message after the head with its `Content-Length`: what
  the gateway's relay writes when the upstream's whole answer arrives in one read, as
  the unpaced simulator's does (a stream still arriving is chunked; not this one).
- `POST /v1/audio/speech` gets a streamed PCM answer (`bench.speech_source`'s pieces),
  each piece a body message, as the gateway relays them.
- Every other request, whatever its method or path, gets the constant chat completion
  (so `GET /health` is a readiness probe too).

SIGTERM or SIGINT starts Hypercorn's graceful shutdown.
"""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

import orjson
import trio
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework

from bench.speech_source import PIECES, TONE
from gateway.app.server import hypercorn_config
from gateway.platform.config import load_settings

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

REQUEST_ID = "6f1c2a9e-3b7d-4e58-9a0c-2d4b8e7f1a36"  # the gateway's are uuid4s
# Shaped like the gateway's non-streamed answer (`gateway/chat/render.py`): the
# completion, `service` and a `_gateway` block of the same fields, so that the bytes
# written per request are of the same order.
BODY = orjson.dumps(
    {
        "id": "chatcmpl-" + REQUEST_ID.replace("-", ""),
        "object": "chat.completion",
        "created": 1_763_700_000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": (
                        "Benchmarks measure what they measure, on the machine they ran on,"
                        " and nothing else at all."
                    ),
                },
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 13, "completion_tokens": 20, "total_tokens": 33},
        "service": {
            "request_id": REQUEST_ID,
            "provider": "openai",
            "latency_ms": 1,
            "cache": {"hit": False},
            "cost": {"input": 1.95e-06, "output": 1.2e-05, "total": 1.395e-05},
        },
        "_gateway": {
            "request_id": REQUEST_ID,
            "latency_ms": 1,
            "user_id": "bench",
            "timestamp": 1_763_700_000,
            "routing": {
                "mode": "balanced",
                "task_type": "general",
                "provider": "openai",
                "model": "gpt-4o-mini",
                "reasoning": "balanced: the only configured provider serving the model",
                "estimated_cost": 0.00015555,
                "actual_cost": 1.395e-05,
            },
            "alternatives": [],
            "rate_limiting": {"enabled": True, "retry_attempts": 0, "retry_delay_ms": 0},
            "fallback": {
                "fallback_attempted": False,
                "fallback_provider": None,
                "fallback_model": None,
                "fallback_result": None,
                "attempts": [{"provider": "openai", "model": "gpt-4o-mini", "outcome": "ok"}],
            },
            "tools": {"enabled": False, "tool_count": 0, "tool_calls_made": 0, "tools_called": []},
            "compliance": {
                "enabled": False,
                "classification": None,
                "regime": None,
                "redacted": False,
            },
            "energy": {
                "energy_kwh": 1.23456e-05,
                "confidence_level": "estimated",
                "task_multiplier": 1.0,
                "provider_pue": 1.12,
            },
            "carbon": {
                "carbon_gco2e": 0.00456789,
                "grid_region": "us-east",
                "grid_intensity_gco2_per_kwh": 370.0,
                "confidence_level": "estimated",
            },
        },
    }
)

# The gateway's answer headers (`gateway/chat/service.py`, `gateway/limits/headers.py`),
# with values of the sizes the benchmark's key produces; Hypercorn adds date and server
# to both.
HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(BODY)).encode()),
    (b"x-request-id", REQUEST_ID.encode()),
    (b"x-service-model-used", b"gpt-4o-mini"),
    (b"x-ratelimit-limit-rpm", b"100000000"),
    (b"x-ratelimit-remaining-rpm", b"99999312"),
    (b"x-ratelimit-concurrent", b"1"),
    (b"x-ratelimit-concurrent-limit", b"100000"),
    (b"x-ratelimit-limit", b"100000000"),
    (b"x-ratelimit-remaining", b"99999312"),
    (b"x-ratelimit-reset", b"1763700060"),
    (b"x-ratelimit-limit-requests", b"100000000"),
    (b"x-ratelimit-remaining-requests", b"99999312"),
    (b"x-ratelimit-reset-requests", b"59.998s"),
    (b"x-ratelimit-limit-tokens", b"10000000000"),
    (b"x-ratelimit-remaining-tokens", b"9999977296"),
    (b"x-ratelimit-reset-tokens", b"59.998s"),
    (b"x-service-energy-kwh", b"0.0000123456"),
    (b"x-service-carbon-gco2e", b"0.00456789"),
]


# A streamed answer's head as the gateway's (`gateway/chat/service.py` STREAM_HEADERS):
# no footprint headers (those are in the last chunk); its length is added per answer.
FOOTPRINT = (b"x-service-energy-kwh", b"x-service-carbon-gco2e")
STREAM_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/event-stream"),
    *(h for h in HEADERS[2:] if h[0] not in FOOTPRINT),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
SPEECH_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"audio/pcm"),
    *(h for h in HEADERS[2:] if h[0] not in FOOTPRINT),
]
SPEECH_PATH = "/v1/audio/speech"


def make_app(stream_body: bytes) -> Callable[[Message, Receive, Send], Awaitable[None]]:
    """The whole application, with the event stream it answers streamed requests with."""

    async def floor_app(scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        body = await _body(receive)
        if body is None:
            return
        if scope["path"] == SPEECH_PATH:
            await _speech(send)
        elif stream_body and b'"stream":true' in body:
            length = (b"content-length", str(len(stream_body)).encode())
            headers = [*STREAM_HEADERS, length]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": stream_body, "more_body": False})
        else:
            await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
            await send({"type": "http.response.body", "body": BODY, "more_body": False})

    return floor_app


floor_app = make_app(b"")


async def _body(receive: Receive) -> bytes | None:
    """The request body, or None when the client left."""
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def _speech(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SPEECH_HEADERS})
    for _ in range(PIECES):
        await send({"type": "http.response.body", "body": TONE, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _signalled() -> None:
    """Return on SIGINT or SIGTERM, as the gateway's `serve` command does."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor_app", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--stream-body", type=Path, help="the event stream of streamed answers")
    args = parser.parse_args(argv)
    logging.basicConfig(  # as `gateway serve` does: Hypercorn's error log goes through it
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = load_settings(overrides={"host": args.host, "port": args.port})
    config = hypercorn_config(settings, args.host, args.port)
    # Plain dicts for the ASGI messages: Hypercorn's TypedDicts would add nothing here.
    app = cast(ASGIFramework, make_app(args.stream_body.read_bytes() if args.stream_body else b""))
    trio.run(partial(serve, app, config, shutdown_trigger=_signalled))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
