"""`python -m bench.agents [--requests N] [--rounds R]`: what agent admission adds to chat.

Two measures, each an A/B taken back to back (A: a plain API key, B: an agent key whose
organisation sets every agent limit high, so every check runs and none refuses),
alternating A and B blocks `--rounds` times so that a change of the machine's load hits
both alike:

1. `admit`: the admission call alone (`gateway.upstream.admission.Admission.admit` then the hold's
   settlement), in process, `--calls` times per block: microseconds per call.
2. HTTP: non-streamed chat completions through a demo gateway (simulated provider, no
   pacing) at concurrency `--concurrency`, `--requests` per block: requests per second
   and median latency.

The keys' own rate limits are off (`rate_limits_enabled=False`), so the difference
between A and B is the agent's admission alone. The load average is printed beside the
figures; the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.auth import Principal
from gateway.platform.config import Settings
from gateway.upstream.options import ServiceOptions
from providers.types import Usage

ADMIN_KEY = "gw_admin_bench_" + secrets.token_hex(12)
AGENT_LIMITS = {
    "requests_per_minute": 10_000_000,
    "cost_per_session": 1_000.0,
    "cost_daily": 1_000.0,
    "cost_monthly": 1_000.0,
    "concurrent_sessions": 1_000,
    "audio_minutes_daily": 1_000,
    "ocr_pages_daily": 1_000,
    "embedding_tokens_daily": 10_000_000,
}


async def _keys(gateway: RunningGateway) -> tuple[str, str]:
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    ) as http:
        ceilings = await http.put("/v1/management/agent-limits", json=AGENT_LIMITS)
        assert ceilings.status_code == 200, ceilings.text
        plain = await http.post("/v1/management/api-keys", json={"name": "plain"})
        agent = await http.post("/v1/mcp/agents", json={"name": "a", "limits": AGENT_LIMITS})
    assert plain.status_code in (200, 201) and agent.status_code == 201, (plain.text, agent.text)
    return str(plain.json()["key"]), str(agent.json()["key"])


async def _admit_block(gateway: RunningGateway, secret: str, calls: int) -> float:
    """Microseconds per admission and settlement."""
    state = gateway.state
    key = state.keyring.lookup(secret)
    assert key is not None
    principal, service = Principal(key), ServiceOptions()
    started = time.perf_counter()
    for _ in range(calls):
        hold = await state.admission.admit(principal, service, prompt_tokens=20, max_tokens=20)
        hold.settle(Usage(20, 20))
        hold.release()
    return (time.perf_counter() - started) / calls * 1e6


async def _http_block(
    url: str, secret: str, requests: int, concurrency: int, failures: list[str]
) -> tuple[float, float]:
    """Requests per second and median latency (ms) of `requests` chat completions; a
    request that fails or times out (30 s) goes into `failures`."""
    latencies: list[float] = []
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=url, headers={"authorization": f"Bearer {secret}"}, timeout=30, limits=limits
    ) as http:
        left = iter(range(requests))

        async def worker() -> None:
            for n in left:
                body["messages"] = [
                    {"role": "user", "content": f"bench {n} {secrets.token_hex(4)}"}
                ]
                t0 = time.perf_counter()
                try:
                    answer = await http.post("/v1/chat/completions", json=dict(body))
                except httpx.TimeoutException:
                    failures.append("timeout")  # reported, not hidden: see README
                    continue
                latencies.append((time.perf_counter() - t0) * 1000)
                if answer.status_code != 200:
                    failures.append(str(answer.status_code))

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(concurrency):
                nursery.start_soon(worker)
        elapsed = time.perf_counter() - started
    return requests / elapsed, statistics.median(latencies)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            host="127.0.0.1",
            port=0,
            data_dir=Path(tmp),
            demo=True,
            admin_key=ADMIN_KEY,
            sim_ttft_ms=0,
            sim_tokens_per_second=0,
            health_probe_interval_s=0,
            # Without the keys' own limits (both keys would pass them alike, and their
            # rpm would refuse a benchmark): the difference is the agent's admission.
            rate_limits_enabled=False,
        )
        async with trio.open_nursery() as nursery:
            gateway: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
            plain, agent = await _keys(gateway)
            figures: dict[str, Any] = {"admit_us": {"plain": [], "agent": []}}
            figures["http"] = {"plain": [], "agent": []}
            figures["failures"] = {"plain": [], "agent": []}
            for _ in range(args.rounds):
                for name, secret in (("plain", plain), ("agent", agent)):
                    figures["admit_us"][name].append(
                        await _admit_block(gateway, secret, args.calls)
                    )
                    figures["http"][name].append(
                        await _http_block(
                            gateway.url,
                            secret,
                            args.requests,
                            args.concurrency,
                            figures["failures"][name],
                        )
                    )
            nursery.cancel_scope.cancel()
    figures["load_average"] = os.getloadavg()
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = [
        f"load average (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in figures['load_average'])}"
    ]
    for name in ("plain", "agent"):
        admit_us = figures["admit_us"][name]
        http = figures["http"][name]
        lines.append(
            f"{name:5}: admit {statistics.median(admit_us):7.1f} us/call "
            f"(blocks {', '.join(f'{x:.1f}' for x in admit_us)}); "
            f"HTTP {statistics.median(r for r, _ in http):6.1f} req/s, "
            f"p50 {statistics.median(p for _, p in http):5.1f} ms "
            f"(blocks {', '.join(f'{r:.0f}' for r, _ in http)} req/s); "
            f"failures {figures['failures'][name] or 'none'}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    print(report(trio.run(main, parser.parse_args())))
