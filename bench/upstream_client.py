"""CPU per request of the gateway's upstream clients: httpx against `LeanUpstream`.

Starts `python -m providers.sim` in a subprocess pinned to one core, pins this process
to another, and POSTs OpenAI chat completions through each client exactly as the
gateway builds it (`gateway.app.server.upstream_client`): N sequential requests, then N
requests from 32 concurrent tasks, whole answers and streamed ones. Reports the client
process's CPU time per request (`time.process_time`, so the simulator's work is not
counted) and requests per second.

    .venv/bin/python bench/upstream_client.py [--requests 3000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.app.server import upstream_client  # noqa: E402
from gateway.platform.config import Settings  # noqa: E402
from providers.upstream import Upstream  # noqa: E402

HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
Client = Literal["lean", "httpx"]  # `Settings.upstream_client`
CLIENTS: tuple[Client, ...] = ("httpx", "lean")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="runs per case; the best is kept")
    parser.add_argument("--sim-core", type=int, default=1)
    parser.add_argument("--client-core", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=20)
    return parser.parse_args(argv)


@contextmanager
def simulator(core: int) -> Iterator[str]:
    """A simulator subprocess on `core`; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "providers.sim", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        os.sched_setaffinity(process.pid, {core})
        assert process.stdout is not None
        line = process.stdout.readline()  # "simulator listening on http://host:port"
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(timeout=10)


def body(stream: bool, max_tokens: int) -> bytes:
    payload = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Say hello to the benchmark."}],
        "max_tokens": max_tokens,
        "stream": stream,
    }
    return json.dumps(payload).encode()


async def one(client: Upstream, url: str, data: bytes, stream: bool) -> None:
    if stream:
        async with client.stream("POST", url, HEADERS, data) as response:
            async for _ in response:
                pass
            status = response.status
    else:
        status = (await client.request("POST", url, HEADERS, data)).status
    if status != 200:
        raise RuntimeError(f"the simulator answered {status}")


async def drive(client: Upstream, url: str, data: bytes, stream: bool, n: int, tasks: int) -> None:
    """`n` requests from `tasks` concurrent tasks (1: sequential)."""
    share, extra = divmod(n, tasks)

    async def worker(count: int) -> None:
        for _ in range(count):
            await one(client, url, data, stream)

    async with trio.open_nursery() as nursery:
        for index in range(tasks):
            nursery.start_soon(worker, share + (index < extra))


async def measure(kind: Client, url: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for stream in (False, True):
        data = body(stream, args.max_tokens)
        for tasks in (1, args.concurrency):
            best: dict[str, Any] | None = None
            for _ in range(args.rounds):
                client = upstream_client(Settings(upstream_client=kind))
                try:
                    await drive(client, url, data, stream, args.warmup, tasks)
                    cpu, wall = time.process_time(), time.perf_counter()
                    await drive(client, url, data, stream, args.requests, tasks)
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                finally:
                    await client.aclose()
                row = {
                    "client": kind,
                    "mode": "stream" if stream else "whole",
                    "tasks": tasks,
                    "cpu_us_per_request": round(cpu / args.requests * 1e6, 1),
                    "requests_per_second": round(args.requests / wall),
                }
                if best is None or row["cpu_us_per_request"] < best["cpu_us_per_request"]:
                    best = row
            assert best is not None
            rows.append(best)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'client':<7}{'mode':<8}{'tasks':>6}{'CPU µs/req':>12}{'req/s':>9}"]
    for row in rows:
        lines.append(
            f"{row['client']:<7}{row['mode']:<8}{row['tasks']:>6}"
            f"{row['cpu_us_per_request']:>12}{row['requests_per_second']:>9}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    os.sched_setaffinity(0, {args.client_core})
    with simulator(args.sim_core) as base:
        url = f"{base}/openai/v1/chat/completions"
        rows: list[dict[str, Any]] = []
        for kind in CLIENTS:
            rows += trio.run(measure, kind, url, args)
    rows.sort(key=lambda row: (row["mode"], row["tasks"], row["client"]))
    print(table(rows))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
