"""Time to first audio byte added by the gateway, each server a process of its own.

The upstream (`bench/speech_source.py`: OpenAI's streamed-speech wire format, its first
byte exactly `delay_ms` after the request, at almost no CPU) and the gateway (`python -m
gateway serve`, OpenAI's API pointed at the upstream, a `prod` key with limits, as in
`bench/stack.py`) run as separate processes pinned like the main bench's: the gateway
alone on one core, the upstream and this client on the other. So a figure charges the
gateway with its own CPU only, not with the upstream's or the client's. (The simulator
is not the upstream here: it synthesises each clip with eSpeak, several CPU-ms, so at
c=32 its own queue, not the delay, set its first byte.)

The client is a raw-socket HTTP/1.1 client (`bench.sse_client`'s reader) on kept-alive
connections: the clock runs from the request's first byte sent to the first byte of the
response *body* (not its head). Each of `concurrency` workers asks the upstream directly,
then through the gateway, in turn, so both see the same load; the difference of the
medians is what the gateway adds. The gateway's CPU time per speech request is read from
`/proc/<pid>/stat` around each point, and its CPU while idle (`gateway_idle_cpu_ms_per_s`:
workers, timers, pause tracing) beforehand, since every point's CPU per request includes
it (most at c=1, whose points last longest).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import trio

from bench import procs, stack
from bench.machine import Pinning, plan_pinning
from bench.sse_client import Endpoint, ResponseError, _Reader

SPEECH_BODY = json.dumps(
    {
        "model": "tts-1",
        "voice": "alloy",
        "input": "Your table is ready.",
        "response_format": "pcm",  # no encoding at the simulator: its first byte is the delay
        "stream": True,
    },
    separators=(",", ":"),
).encode()
WARM_UP_REQUESTS = 16


def speech_endpoint(port: int, path: str, key: str) -> Endpoint:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    return Endpoint("127.0.0.1", port, path, headers, SPEECH_BODY)


async def first_body_byte(reader: _Reader, request: bytes) -> float:
    """Send one request on the reader's connection; seconds to the first body byte.
    Reads the rest of the (chunked) answer so the connection can take the next one."""
    started = time.perf_counter()
    await reader.conn.send_all(request)
    status, headers = await reader.head()
    if status != 200 or headers.get("transfer-encoding") != "chunked":
        raise ResponseError(f"status {status}, {headers}")
    if not reader.buf:
        await reader._fill()
    elapsed = time.perf_counter() - started
    while await reader.next_chunk_size():
        pass
    return elapsed


async def _worker(endpoints: list[Endpoint], count: int, found: list[list[float]]) -> None:
    """`count` rounds, each one request to every endpoint in turn, on kept-alive connections
    (each used once untimed first: a connection's first request pays its accept)."""
    async with AsyncExitStack() as connections:
        readers = []
        for endpoint in endpoints:
            conn = await trio.open_tcp_stream(endpoint.host, endpoint.port)
            readers.append(_Reader(await connections.enter_async_context(conn)))
        requests = [endpoint.request_bytes() for endpoint in endpoints]
        for reader, request in zip(readers, requests, strict=True):
            await first_body_byte(reader, request)  # untimed: the connection's first use
        for _ in range(count):
            for times, reader, request in zip(found, readers, requests, strict=True):
                times.append(await first_body_byte(reader, request) * 1000)


async def measure(endpoints: list[Endpoint], concurrency: int, requests: int) -> list[list[float]]:
    """About `requests` first-byte times (ms) per endpoint at `concurrency`."""
    found: list[list[float]] = [[] for _ in endpoints]
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(_worker, endpoints, max(1, requests // concurrency), found)
    return found


def _percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p99_ms": round(p99, 2)}


def _point(
    direct: Endpoint, through: Endpoint, gateway: procs.Proc, concurrency: int, requests: int
) -> dict[str, Any]:
    cpu_before = gateway.cpu_s()
    upstream, ours = trio.run(measure, [direct, through], concurrency, requests)
    cpu_ms = (gateway.cpu_s() - cpu_before) * 1000
    point: dict[str, Any] = {"requests": len(ours), "load_average": os.getloadavg()[0]}
    point["direct"] = _percentiles(upstream)
    point["gateway"] = _percentiles(ours)
    point["added_p50_ms"] = round(statistics.median(ours) - statistics.median(upstream), 2)
    point["added_p99_ms"] = round(point["gateway"]["p99_ms"] - point["direct"]["p99_ms"], 2)
    point["gateway_cpu_ms_per_request"] = round(cpu_ms / len(ours), 2)
    return point


def _idle_cpu_ms_per_s(proc: procs.Proc, seconds: float = 2.0) -> float:
    """The gateway's CPU with no request (its workers, timers, pause tracing): part of
    every point's CPU per request, most visibly at c=1, whose points last longest."""
    before = proc.cpu_s()
    time.sleep(seconds)
    return round((proc.cpu_s() - before) * 1000 / seconds, 1)


def _start_source(work: Path, pinning: Pinning, delay_ms: int, cleanup: ExitStack) -> int:
    """`bench.speech_source` on the simulator's core; its port."""
    port = procs.free_port()
    argv = [sys.executable, "-m", "bench.speech_source", "--port", str(port)]
    argv += ["--delay-ms", str(delay_ms)]
    source = procs.start("speech-source", argv, cores=pinning.simulator, log_dir=work)
    cleanup.callback(source.stop)
    url = f"http://127.0.0.1:{port}/openai/v1/models"
    procs.wait_ready(source, url, deadline_s=stack.READY_DEADLINE_S)
    return port


def first_bytes(
    requests: int, delay_ms: int, concurrencies: tuple[int, ...] = (1, 32)
) -> dict[str, Any]:
    """Start the speech source and the gateway, measure each concurrency, stop both."""
    pinning = plan_pinning()
    os.sched_setaffinity(0, set(pinning.load))
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as cleanup:
        work = Path(tmp)
        port = _start_source(work, pinning, delay_ms, cleanup)
        gateway = stack._start_gateway(work, pinning, port, cleanup)
        direct = speech_endpoint(port, "/openai/v1/audio/speech", stack.SIM_KEY)
        through = speech_endpoint(gateway.port, "/v1/audio/speech", gateway.api_key)
        trio.run(measure, [through], 1, WARM_UP_REQUESTS)
        figures: dict[str, Any] = {"upstream_first_byte_delay_ms": delay_ms}
        figures["gateway_idle_cpu_ms_per_s"] = _idle_cpu_ms_per_s(gateway.server)
        figures["pinning"] = {"gateway": pinning.gateway, "simulator_and_client": pinning.load}
        for concurrency in concurrencies:
            figures[f"c{concurrency}"] = _point(
                direct, through, gateway.server, concurrency, requests
            )
            print(f"c={concurrency}:", figures[f"c{concurrency}"], file=sys.stderr)
        return figures
