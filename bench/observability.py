"""Section 9, observability's cost: the request log and tracing both on, against both off.

Issue 33's budget: the request log (written in the usage writer's batches) and tracing
(a server span per request, a client span per attempt, exported over OTLP/HTTP) together
may cost at most 5 % of the requests/s of the non-streamed chat path. Two gateways (one
worker each, on the gateway's core) run at once against the static upstream
(`bench.static_upstream`, which also answers the OTLP exports as a collector would): one
with `GATEWAY_REQUEST_LOG_DAYS=0` and no OTLP endpoint, one with the request log's default
window and every span exported (`GATEWAY_TRACE_SAMPLE_RATIO=1`). They are measured in
alternating rounds (section 7's method: `bench.workers.interleaved`), off then on, at
concurrency 1 and 32, so both sides see the same minutes of a host whose speed moves.
The figures: requests/s on over off (all rounds, and round by round), CPU-ms per request
of each, and what the "on" gateway really did (entries in its request log, spans its
exporter sent), so a ratio near 1 cannot come from a feature that never ran.
"""

from __future__ import annotations

import os
import statistics
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench import procs
from bench.plan import Run
from bench.stack import (
    ADMIN_KEY,
    CHAT_PATH,
    GATEWAY_ENV,
    READY_DEADLINE_S,
    SIM_KEY,
    SIM_PATH,
    Stack,
    Target,
    _create_bench_key,
)
from bench.workers import interleaved, round_plan, static_upstream

SETUPS = {
    "off": {"GATEWAY_REQUEST_LOG_DAYS": "0"},
    "on": {"GATEWAY_REQUEST_LOG_DAYS": "7", "GATEWAY_TRACE_SAMPLE_RATIO": "1"},
}
BUDGET = 0.05  # the most the two may cost, as a share of requests/s


def observability(run: Run, stack: Stack) -> dict[str, Any]:
    """Both gateways against the static upstream, measured interleaved (see the module
    docstring); `stack` is not used beyond the run's pinning."""
    load_before = os.getloadavg()
    with static_upstream(run) as upstream, ExitStack() as running:
        targets = {}
        for name in SETUPS:
            targets[name] = _gateway(run, upstream.port, name)
            running.callback(targets[name].server.stop)
        others = {"upstream": upstream.server.pid}
        points = interleaved(run, targets, others)
        did = _what_it_did(targets["on"])
        roles = {name: _roles(target.server.pid) for name, target in targets.items()}
    rounds, seconds = round_plan(run.plan)
    return {
        "rounds": rounds,
        "round_s": seconds,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "points": points,
        "cost": cost(points),
        "cpu_by_process": by_process(points, roles),
        "on_did": did,
    }


def cost(points: dict[str, Any]) -> dict[str, Any]:
    """Requests/s with both on over both off, at each concurrency (pure): all requests
    over all the time, the paired rounds' ratios and their median, and the share of
    requests/s lost (1 - ratio); CPU-ms per request of each."""
    figures: dict[str, Any] = {}
    for concurrency in sorted({c for p in points.values() for c in p}, key=int):
        off = points.get("off", {}).get(concurrency, {})
        on = points.get("on", {}).get(concurrency, {})
        if not off.get("rps") or not on.get("rps"):
            continue
        pairs = zip(off.get("rounds", []), on.get("rounds", []), strict=False)
        by_round = [round(b["rps"] / a["rps"], 3) for a, b in pairs if a["rps"]]
        ratio = on["rps"] / off["rps"]
        figures[concurrency] = {
            "rps_off": off["rps"],
            "rps_on": on["rps"],
            "rps_ratio": round(ratio, 3),
            "rps_ratio_by_round": by_round,
            "rps_ratio_median_round": round(statistics.median(by_round), 3) if by_round else None,
            "rps_lost_share": round(1 - ratio, 4),
            "cpu_ms_per_request_off": off.get("server_cpu_ms_per_request"),
            "cpu_ms_per_request_on": on.get("server_cpu_ms_per_request"),
            "within_budget": 1 - ratio <= BUDGET,
        }
    return figures


def by_process(points: dict[str, Any], roles: dict[str, dict[str, str]]) -> dict[str, Any]:
    """CPU-ms per request of each of a gateway's processes (`gateway`, `usage writer`,
    `span exporter`), both setups, each concurrency (pure): where "on" spends its extra,
    the steadier figure on a shared machine where req/s moves from round to round."""
    split: dict[str, Any] = {}
    for setup, by_concurrency in points.items():
        for concurrency, point in by_concurrency.items():
            spent = point.get("cpu", {}).get("cpu_ms_per_request", {})
            named = {"gateway": spent.get("main")}
            for name, role in roles.get(setup, {}).items():
                named[role] = spent.get(name)
            split.setdefault(concurrency, {})[setup] = named
    return split


def _roles(pid: int) -> dict[str, str]:
    """The gateway's children by their `CpuShare` name (`worker <pid>`) and their role,
    read from their command lines."""
    roles = {}
    for child in procs.children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"usage_child" in command:
            roles[f"worker {child}"] = "usage writer"
        elif b"trace_child" in command:
            roles[f"worker {child}"] = "span exporter"
    return roles


def _gateway(run: Run, upstream_port: int, setup: str) -> Target:
    """`gateway serve` (one worker, the gateway's core) against the static upstream, with
    the request log and tracing as `setup` says; ready with a bench key."""
    port = procs.free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env = {k: v for k, v in env.items() if not k.startswith(("GATEWAY_OTLP", "GATEWAY_REQUEST"))}
    env |= GATEWAY_ENV | SETUPS[setup]
    env |= {
        "GATEWAY_TRACE_PAUSES": "false",
        "GATEWAY_ADMIN_KEY": ADMIN_KEY,
        "OPENAI_API_KEY": SIM_KEY,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream_port}{SIM_PATH.removesuffix(CHAT_PATH)}",
    }
    if setup == "on":
        env["GATEWAY_OTLP_ENDPOINT"] = f"http://127.0.0.1:{upstream_port}/v1/traces"
    argv = [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--data-dir", str(run.work / f"observability-{setup}-data")]
    name = f"gateway-observability-{setup}"
    server = procs.start(name, argv, cores=run.pinning.gateway, log_dir=run.work, env=env)
    try:
        procs.wait_ready(server, f"http://127.0.0.1:{port}/health", deadline_s=READY_DEADLINE_S)
        key = _create_bench_key(port)
    except BaseException:
        server.stop()
        raise
    label = f"gateway, request log and tracing {setup}"
    return Target(name, label, port, "/v1" + CHAT_PATH, key, server)


def _what_it_did(target: Target) -> dict[str, Any]:
    """The "on" gateway's request log (its newest entry) and its exporter's counts."""
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    base = f"http://127.0.0.1:{target.port}"
    with httpx.Client(base_url=base, headers=headers, timeout=10, trust_env=False) as client:
        newest = client.get("/v1/management/request-log", params={"limit": 1}).json()
        metrics = client.get("/metrics").text
    spans = {
        fate: _sample(metrics, f'gateway_trace_spans_total{{fate="{fate}"}}')
        for fate in ("exported", "failed", "dropped")
    }
    entry = (newest.get("data") or [{}])[0]
    return {
        "request_log_newest": {k: entry.get(k) for k in ("endpoint", "status", "attempts")},
        "request_log_written": _sample(metrics, 'gateway_usage_log_records_total{fate="written"}'),
        "spans": spans,
    }


def _sample(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None
