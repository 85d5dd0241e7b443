"""Instructions per request of the request's edge alone (issue 37): what wraps a handler.

`python -m bench.edge_instructions` runs itself under callgrind (instrumentation on for
the measured loop only) and counts, per request, the gateway's edge in-process with no
socket and no upstream: the middleware (`ObservedApp`: identity, metrics, the access log
held in a `BatchedHandler` and rendered by its flush every 100 requests), `DocLinks`, the
fast path (`FastPath`: drain scope, `Exchange`, authentication from the key ring, the
body taken from a `RequestLink` queue) around a handler that answers a chat completion's
JSON with a chat answer's 23 headers and notes a usage record. The handler alone (`--mode
handler`) is counted the same way; the edge is the difference. `--usage` also feeds the
record to the metrics (`observe_usage`, the usage sink the engine calls).

Not the gateway's figure (`python -m bench --only instructions` is): a guide to the
edge's own steps, exact to a few hundred instructions between runs of one tree, where
the whole gateway's count moves by ~50 K with its idle rate.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio

from gateway.operator.logs import _flush_batched, configure_logging
from gateway.operator.metrics import GatewayMetrics
from gateway.operator.middleware import ObservedApp
from gateway.platform.asgi import FastPath, Route
from gateway.platform.auth import KeyRing, Principal
from gateway.platform.body import Answer
from gateway.platform.callers import Authenticator
from gateway.platform.context import note_usage
from gateway.platform.doc_links import DocLinks
from gateway.platform.drain import Drain
from gateway.platform.jsonio import JsonAnswer
from gateway.platform.request_link import LINK, RequestLink
from gateway.platform.upload_pace import UploadFloor
from store.keys import new_record
from store.request_log import LoggedAttempt
from store.usage import UsageRecord

KEY = "gw_live_" + "a" * 40
WARM_UP, REQUESTS, FLUSH_EVERY = 300, 1000, 100
REQUEST = b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
HEAD = [
    (b"host", b"127.0.0.1:8080"),
    (b"authorization", b"Bearer " + KEY.encode()),
    (b"content-type", b"application/json"),
    (b"content-length", str(len(REQUEST)).encode()),
    (b"user-agent", b"wrk"),
]
LIMITS = ("limit", "remaining", "reset")
HEADERS = {
    **{f"x-ratelimit-{k}-{unit}": "100" for k in LIMITS for unit in ("requests", "tokens")},
    **{f"x-ratelimit-{k}-{unit}-minute": "10" for k in LIMITS for unit in ("r", "t")},
    "x-service-model-used": "openai/gpt-4o-mini",
    "x-service-energy-wh": "0.1",
    "x-service-carbon-g": "0.02",
    "x-service-cost-usd": "0.0001",
    "openai-processing-ms": "3",
}
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}


class Edge:
    """The edge around a fixed handler, and one request through it."""

    def __init__(self, observe_usage: bool) -> None:
        self.metrics = GatewayMetrics()
        self.observe_usage = observe_usage
        ring = KeyRing()
        now = datetime.now(UTC)
        ring.put(new_record(KEY, workspace_id="default", name="k", kind="prod",
                            permissions=("chat",), now=now))  # fmt: skip
        fast = FastPath(
            None,
            [Route("POST", "/v1/chat/completions", self.handler)],
            authenticator=Authenticator(ring, None),  # type: ignore[arg-type]
            drain=Drain(),
            max_body_bytes=1 << 20,
            body_timeout_s=30.0,
            floor=UploadFloor(),
        )
        self.app = ObservedApp(DocLinks(fast, None), self.metrics)

    @contextlib.asynccontextmanager
    async def handler(
        self, principal: Principal | None, body: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[Answer]:
        record = UsageRecord(
            request_id="r", key_id="key_1", workspace_id="default", model="gpt-4o-mini",
            provider="openai", endpoint="chat", status=200, created_at=datetime.now(UTC),
            prompt_tokens=10, completion_tokens=2, cost_usd=1e-5, energy_kwh=1e-7,
            carbon_gco2e=1e-5, ttft_ms=3.0,
            attempts=(LoggedAttempt("openai", "gpt-4o-mini", 1, 0.1, 3.0, "won"),),
        )  # fmt: skip
        note_usage(record)
        if self.observe_usage:
            self.metrics.observe_usage(record)
        yield JsonAnswer(200, ANSWER, dict(HEADERS))

    async def request(self) -> None:
        await self.app(_scope(), _no_receive, _send)

    async def handler_only(self) -> None:
        _scope()  # what the server makes per request, as `request` does
        async with self.handler(None, REQUEST, {}):
            await _send({"type": "http.response.start"})
            await _send({"type": "http.response.body"})


def _scope() -> dict[str, Any]:
    put, queue = trio.open_memory_channel[Any](10)
    put.send_nowait({"type": "http.request", "body": REQUEST, "more_body": False})
    return {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": HEAD,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8080),
        "scheme": "http",
        "extensions": {LINK: RequestLink(queue)},
    }


async def _no_receive() -> dict[str, Any]:
    raise AssertionError("the body is queued")


async def _send(message: dict[str, Any]) -> None:
    pass


def _control(*arguments: str) -> None:
    subprocess.run(["callgrind_control", *arguments, str(os.getpid())], check=True,
                   capture_output=True)  # fmt: skip


async def _loop(mode: str, observe_usage: bool, count: int) -> None:
    """`count` requests counted, after `WARM_UP` not counted."""
    edge = Edge(observe_usage)
    step = edge.request if mode == "edge" else edge.handler_only
    for _ in range(WARM_UP):
        await step()
    _flush_batched()
    _control("--instr=on")
    _control("--zero")
    for n in range(count):
        await step()
        if n % FLUSH_EVERY == FLUSH_EVERY - 1:
            _flush_batched()
    _flush_batched()
    _control("--dump")
    _control("--instr=off")


def _counted(mode: str, observe_usage: bool) -> float:
    """Run this module under callgrind in `mode`; instructions per request."""
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "callgrind.out"
        argv = [sys.executable, "-m", "bench.edge_instructions", "--inner", mode]
        argv += ["--usage"] if observe_usage else []
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={out}", *argv], check=True,
                       capture_output=True)  # fmt: skip
        dump = next(p for p in Path(work).iterdir() if p.name != out.name)
        found = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.MULTILINE)
        assert found is not None, "callgrind wrote no total"
        return int(found.group(1)) / REQUESTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--usage", action="store_true", help="feed observe_usage too")
    parser.add_argument("--inner", choices=("edge", "handler"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        with open(os.devnull, "w") as nowhere:  # what `gateway serve` sets up, written nowhere
            configure_logging("json", stream=nowhere, batched=True)
            trio.run(_loop, args.inner, args.usage, REQUESTS)
        return 0
    edge, handler = _counted("edge", args.usage), _counted("handler", args.usage)
    print(f"edge and handler {edge / 1e3:.1f} K, handler alone {handler / 1e3:.1f} K, "
          f"the edge {(edge - handler) / 1e3:.1f} K instructions per request")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
