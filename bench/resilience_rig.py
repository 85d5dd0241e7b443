"""The rig of `bench.resilience`: its sizes, the simulator and gateway processes, the
management calls it makes, and the client that times one request and says who served it.

Kept apart from the measurements so that `resilience.py` reads as the three scenarios.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx

from bench import machine, procs
from bench.sampling import percentile
from bench.stack import ADMIN_KEY, BENCH_KEY_LIMITS, GATEWAY_ENV, READY_DEADLINE_S, SIM_KEY

PRIMARY, FALLBACK = "gpt-4o-mini", "mistral-small-latest"
CHAT_PATH = "/v1/chat/completions"
CLIENT_TIMEOUT_S = 30.0


@attrs.frozen
class Sizes:
    failover_500: int
    failover_timeout: int
    breaker_run: int
    hedge_requests: int
    hedge_concurrency: int
    throughput_s: float
    throughput_concurrency: int
    profile_s: int
    feature_rounds: int

    @classmethod
    def pick(cls, quick: bool) -> Sizes:
        if quick:
            return cls(30, 6, 12, 400, 16, 3.0, 32, 3, 1)
        return cls(300, 40, 30, 3_000, 16, 8.0, 32, 10, 3)


@attrs.frozen
class Gateway:
    proc: procs.Proc
    port: int
    key: str
    env: dict[str, str]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@attrs.define
class Bench:
    """The run: where files go, the pinning, the simulator, and progress lines."""

    work: Path
    pinning: machine.Pinning
    sizes: Sizes
    sim: procs.Proc | None = None
    sim_port: int = 0
    started: float = attrs.field(factory=time.monotonic)

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {text}", file=sys.stderr, flush=True)

    def sim_call(self, method: str, path: str, payload: object = None) -> Any:
        url = f"http://127.0.0.1:{self.sim_port}/_sim/{path}"
        with httpx.Client(timeout=10, trust_env=False) as client:
            answer = client.request(method, url, json=payload)
        answer.raise_for_status()
        return answer.json()

    def upstream_calls(self) -> dict[str, int]:
        by_path = self.sim_call("GET", "stats")["by_path"]
        return {
            vendor: int(by_path.get(f"/{vendor}/v1/chat/completions", 0))
            for vendor in ("openai", "mistral")
        }


# -- processes -----------------------------------------------------------------------------


def start_sim(bench: Bench, cleanup: ExitStack) -> None:
    port = procs.free_port()
    argv = [sys.executable, "-m", "providers.sim", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--ttft-ms", "0", "--tokens-per-second", "0", "--default-max-tokens", "20"]
    sim = procs.start("simulator", argv, cores=bench.pinning.simulator, log_dir=bench.work)
    cleanup.callback(sim.stop)
    procs.wait_ready(sim, f"http://127.0.0.1:{port}/_sim/stats", deadline_s=READY_DEADLINE_S)
    bench.sim, bench.sim_port = sim, port


@contextmanager
def running_gateway(bench: Bench, name: str, extra_env: dict[str, str]) -> Iterator[Gateway]:
    """A fresh gateway (fresh breakers, health and data) with OpenAI and Mistral at the
    simulator; stopped on exit."""
    port = procs.free_port()
    sim = f"http://127.0.0.1:{bench.sim_port}"
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= GATEWAY_ENV | extra_env
    env |= {
        "GATEWAY_ADMIN_KEY": ADMIN_KEY,
        "OPENAI_API_KEY": SIM_KEY,
        "OPENAI_BASE_URL": f"{sim}/openai/v1",
        "MISTRAL_API_KEY": SIM_KEY,
        "MISTRAL_BASE_URL": f"{sim}/mistral",
    }
    argv = [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--data-dir", str(bench.work / f"{name}-data")]
    proc = procs.start(name, argv, cores=bench.pinning.gateway, log_dir=bench.work, env=env)
    try:
        procs.wait_ready(proc, f"http://127.0.0.1:{port}/health", deadline_s=READY_DEADLINE_S)
        key = admin(port, "POST", "/v1/management/api-keys", bench_key_body())["key"]
        yield Gateway(proc, port, str(key), extra_env)
    finally:
        proc.stop()


def bench_key_body() -> dict[str, Any]:
    """The key `make bench` uses: prod, with limits set high enough never to refuse."""
    return {"name": "resilience", "type": "prod", "rate_limits": BENCH_KEY_LIMITS}


def admin(port: int, method: str, path: str, payload: object = None) -> Any:
    with httpx.Client(timeout=10, trust_env=False) as client:
        answer = client.request(
            method,
            f"http://127.0.0.1:{port}{path}",
            json=payload,
            headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        )
    if answer.status_code >= 400:
        raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
    return answer.json() if answer.content else None


def set_hedge(gateway: Gateway, hedge_after_ms: int | None) -> None:
    """`hedge_after_ms` of the primary's provider (None: removed, automatic)."""
    settings = {"settings": {"hedge_after_ms": hedge_after_ms}}
    admin(gateway.port, "PATCH", "/v1/management/providers/openai", settings)


# -- the client ----------------------------------------------------------------------------


def chat_body(*, fallback: bool = True, forced: bool = False) -> dict[str, Any]:
    """A short prompt, 20 tokens back, the response cache bypassed (every request must
    reach an upstream), the fallback named by the request itself."""
    service: dict[str, Any] = {"cache": "skip"}
    if fallback:
        service["fallbacks"] = [FALLBACK]
    body: dict[str, Any] = {
        "model": PRIMARY,
        "messages": [{"role": "user", "content": "Say something about resilience."}],
        "service": service,
    }
    if forced:
        body["provider"] = "openai"
    return body


@attrs.frozen
class Answer:
    seconds: float
    status: int
    provider: str | None
    error: str | None = None  # the start of the body of a non-200 answer


async def ask(
    client: httpx.AsyncClient, gateway: Gateway, model: str = PRIMARY, *, stream: bool = False
) -> Answer:
    """One request and who served it. `seconds` is the wall time of a plain answer, and
    for a stream the time to its first content chunk: what a streaming client waits."""
    body = chat_body() | {"model": model}
    headers = {"Authorization": f"Bearer {gateway.key}"}
    if stream:
        return await _ask_streamed(client, gateway.base + CHAT_PATH, body, headers)
    started = time.perf_counter()
    answer = await client.post(gateway.base + CHAT_PATH, json=body, headers=headers)
    elapsed = time.perf_counter() - started
    if answer.status_code != 200:
        return Answer(elapsed, answer.status_code, None, answer.text[:500])
    provider = answer.json().get("_gateway", {}).get("routing", {}).get("provider")
    return Answer(elapsed, answer.status_code, provider)


async def _ask_streamed(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> Answer:
    """Read the stream to its end; the final chunk's `_gateway` names the provider."""
    started = time.perf_counter()
    first_content: float | None = None
    provider: str | None = None
    async with client.stream("POST", url, json=body | {"stream": True}, headers=headers) as r:
        if r.status_code != 200:
            text = (await r.aread()).decode(errors="replace")
            return Answer(time.perf_counter() - started, r.status_code, None, text[:500])
        async for line in r.aiter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            choices = chunk.get("choices") or [{}]
            if first_content is None and choices[0].get("delta", {}).get("content"):
                first_content = time.perf_counter() - started
            provider = chunk.get("_gateway", {}).get("routing", {}).get("provider", provider)
    if first_content is None:
        return Answer(time.perf_counter() - started, 200, None, "no content in the stream")
    return Answer(first_content, 200, provider)


def new_client(connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(timeout=CLIENT_TIMEOUT_S, limits=limits, trust_env=False)


def summary(answers: Sequence[Answer]) -> dict[str, Any]:
    """p50/p99/max in ms, and who served how many (`failed` for non-200 answers)."""
    seconds = [a.seconds for a in answers]
    served: dict[str, int] = {}
    for a in answers:
        who = a.provider if a.status == 200 and a.provider else f"failed {a.status}"
        served[who] = served.get(who, 0) + 1
    return {
        "requests": len(answers),
        "p50_ms": round(percentile(seconds, 50) * 1000, 2),
        "p90_ms": round(percentile(seconds, 90) * 1000, 2),
        "p99_ms": round(percentile(seconds, 99) * 1000, 2),
        "max_ms": round(max(seconds) * 1000, 2) if seconds else None,
        "served_by": served,
        "errors": [a.error for a in answers if a.error][:3],
    }
