"""The system under test: the simulator, the gateway and LiteLLM, and the three targets.

A target is one way to reach the simulated model: directly (the baseline), through
our gateway, or through LiteLLM. Every target gets the same request body, so the
difference between two targets is what the middle process costs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import attrs
import httpx

from bench import litellm_env, procs
from bench.machine import Pinning
from bench.sse_client import Endpoint

ADMIN_KEY = "gw_admin_bench_" + "0123456789abcdef" * 2
SIM_KEY = "sim-key"
CHAT_PATH = "/chat/completions"
SIM_PATH = "/openai/v1" + CHAT_PATH
MODEL = "gpt-4o-mini"
READY_DEADLINE_S = 60.0
# Limits set on the benchmark's key: high enough never to refuse a request, present so
# that every request goes through the limit checks.
BENCH_KEY_LIMITS = {
    "rpm": 100_000_000,
    "tpm": 10_000_000_000,
    "daily_requests": 1_000_000_000,
    "concurrent": 100_000,
}
# Upstream connections the gateway may open: 5,000 open streams need as many. The
# response cache is off: every request of a run is the same, so with the cache on the
# gateway would answer from memory and never proxy; a cache hit is not what the issue's
# figures are about.
# With GATEWAY_TRACE_PAUSES the gateway logs its collections and loop stalls, which the
# latency timeline lays beside its requests (`bench/timeline.py`).
GATEWAY_ENV = {
    "GATEWAY_MAX_UPSTREAM_CONNECTIONS": "6000",
    "GATEWAY_CACHE_ENABLED": "false",
    "GATEWAY_TRACE_PAUSES": "true",
}


@attrs.frozen
class Target:
    name: str  # "direct" | "gateway" | "litellm"
    label: str
    port: int
    path: str
    api_key: str
    server: procs.Proc  # the process whose memory this target's figures report

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"}

    def endpoint(self, *, stream: bool) -> Endpoint:
        return Endpoint("127.0.0.1", self.port, self.path, self.headers(), chat_body(stream))


def chat_body(stream: bool) -> bytes:
    """The one request every target gets: a short prompt, 20 tokens back."""
    body: dict[str, object] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Say something about benchmarks."}],
        "user": "bench",
    }
    if stream:
        body["stream"] = True
    return json.dumps(body, separators=(",", ":")).encode()


@attrs.define
class Stack:
    sim: procs.Proc
    sim_port: int
    gateway: procs.Proc
    targets: dict[str, Target]
    litellm_note: str
    litellm_version: str | None

    def upstream_requests(self) -> int:
        """Requests the simulator has answered so far (control calls included)."""
        stats = self.sim_control("stats")
        return int(stats["requests_total"]) if isinstance(stats, dict) else 0

    def sim_control(self, path: str, payload: dict[str, object] | None = None) -> object:
        """Call the simulator's control API (`/_sim/...`): GET, or POST with a payload."""
        url = f"http://127.0.0.1:{self.sim_port}/_sim/{path}"
        with httpx.Client(timeout=10, trust_env=False) as client:
            answer = client.post(url, json=payload) if payload else client.get(url)
        answer.raise_for_status()
        return answer.json()


@contextmanager
def running_stack(
    work: Path, pinning: Pinning, *, with_litellm: bool, skipped_because: str = ""
) -> Iterator[Stack]:
    """Start everything, yield the targets, stop everything (also on errors: each
    process is registered for stopping as soon as it is started)."""
    with ExitStack() as cleanup:
        direct = _start_sim(work, pinning, cleanup)
        gateway = _start_gateway(work, pinning, direct.port, cleanup)
        targets = [direct, gateway]
        note, version = f"skipped ({skipped_because})", None
        if with_litellm:
            note, version, litellm = _start_litellm(work, pinning, direct.port, cleanup)
            targets += [litellm] if litellm else []
        by_name = {t.name: t for t in targets}
        yield Stack(direct.server, direct.port, gateway.server, by_name, note, version)


def _start_sim(work: Path, pinning: Pinning, cleanup: ExitStack) -> Target:
    port = procs.free_port()
    argv = [sys.executable, "-m", "providers.sim", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--ttft-ms", "0", "--tokens-per-second", "0", "--default-max-tokens", "20"]
    sim = procs.start("simulator", argv, cores=pinning.simulator, log_dir=work)
    cleanup.callback(sim.stop)
    procs.wait_ready(sim, f"http://127.0.0.1:{port}/_sim/stats", deadline_s=READY_DEADLINE_S)
    return Target("direct", "direct to simulator", port, SIM_PATH, SIM_KEY, sim)


def _start_gateway(
    work: Path,
    pinning: Pinning,
    sim_port: int,
    cleanup: ExitStack,
    *,
    wrapper: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    name: str = "gateway",
    deadline_s: float = READY_DEADLINE_S,
    module: str = "gateway",
) -> Target:
    """A gateway process against the simulator at `sim_port` (`wrapper`: a command it
    runs under, such as valgrind; `env`: settings over `GATEWAY_ENV`; `module`: what
    `python -m` runs, `bench.core_serve` for a gateway composed as a core install)."""
    port = procs.free_port()
    environ = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    environ.update(GATEWAY_ENV)
    environ.update(
        GATEWAY_ADMIN_KEY=ADMIN_KEY,
        OPENAI_API_KEY=SIM_KEY,
        OPENAI_BASE_URL=f"http://127.0.0.1:{sim_port}{SIM_PATH.removesuffix(CHAT_PATH)}",
    )
    environ.update(env or {})
    argv = [*wrapper, sys.executable, "-m", module, "serve"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--data-dir", str(work / f"{name}-data")]
    gateway = procs.start(name, argv, cores=pinning.gateway, log_dir=work, env=environ)
    cleanup.callback(gateway.stop)
    procs.wait_ready(gateway, f"http://127.0.0.1:{port}/health", deadline_s=deadline_s)
    key = _create_bench_key(port)
    return Target("gateway", "through our gateway", port, "/v1" + CHAT_PATH, key, gateway)


def _create_bench_key(port: int) -> str:
    """A prod key with (generous) limits, as a real client of the gateway would have."""
    with httpx.Client(timeout=10, trust_env=False) as client:
        answer = client.post(
            f"http://127.0.0.1:{port}/v1/management/api-keys",
            headers={"Authorization": f"Bearer {ADMIN_KEY}"},
            json={"name": "bench", "type": "prod", "rate_limits": BENCH_KEY_LIMITS},
        )
    answer.raise_for_status()
    return str(answer.json()["key"])


def _start_litellm(
    work: Path, pinning: Pinning, sim_port: int, cleanup: ExitStack
) -> tuple[str, str | None, Target | None]:
    """(note for the report, LiteLLM version, target or None when it is unavailable)."""
    setup = litellm_env.ensure_venv(work)
    if setup.executable is None:
        return setup.note, None, None
    port = procs.free_port()
    proc = litellm_env.launch(setup, sim_port=sim_port, port=port, cores=pinning.litellm, work=work)
    cleanup.callback(proc.stop)
    try:
        procs.wait_ready(proc, litellm_env.ready_url(port), deadline_s=litellm_env.READY_DEADLINE_S)
    except procs.ProcessFailed as exc:
        return f"LiteLLM did not start: {exc}", setup.version, None
    key = litellm_env.MASTER_KEY
    target = Target("litellm", "through LiteLLM", port, "/v1" + CHAT_PATH, key, proc)
    return setup.note, setup.version, target
