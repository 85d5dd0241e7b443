"""Section 6, the HTTP server's floor: Hypercorn alone, with nothing of the gateway behind it.

`bench/floor_app.py` runs the gateway's server with the gateway's settings and a
constant answer. It gets the gateway's core and exactly the load of section 1's gateway
points (the same `wrk` script, at concurrency 1 and 32), so its CPU milliseconds per
request are the part of the gateway's that no gateway code can save, and the gateway's
figure minus this one is the gateway's own work.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from bench import load, procs
from bench.plan import Run
from bench.sections import wrk_point, wrk_script
from bench.stack import READY_DEADLINE_S, Stack, Target, chat_body

CONCURRENCIES = (1, 32)


def floor(run: Run, stack: Stack, measured: dict[str, Any]) -> dict[str, Any]:
    """Start the bare server, load it like the gateway, stop it; compare with section 1."""
    gateway = stack.targets["gateway"]
    with _floor_server(run, gateway) as target:
        answers = {"floor": _answer_shape(target), "gateway": _answer_shape(gateway)}
        load.run_wrk(
            target.url, wrk_script(run, target), connections=32, duration_s=run.plan.warmup_s
        )
        points = {str(c): wrk_point(run, target, c, "floor") for c in CONCURRENCIES}
    return {
        "duration_s": run.plan.point_s,
        "server_cores": list(run.pinning.gateway),
        "answers": answers,
        "points": points,
        "versus": versus(points, measured.get("nonstream", {}).get("points", {})),
    }


@contextmanager
def _floor_server(run: Run, gateway: Target) -> Iterator[Target]:
    """`bench.floor_app` on the gateway's core, as a target that takes the gateway's
    requests (its path and key, so `wrk` sends the very same bytes)."""
    port = procs.free_port()
    argv = [sys.executable, "-m", "bench.floor_app", "--host", "127.0.0.1", "--port", str(port)]
    server = procs.start("floor", argv, cores=run.pinning.gateway, log_dir=run.work)
    try:
        procs.wait_ready(server, f"http://127.0.0.1:{port}/health", deadline_s=READY_DEADLINE_S)
        yield Target("floor", "Hypercorn alone", port, gateway.path, gateway.api_key, server)
    finally:
        server.stop()


def _answer_shape(target: Target) -> dict[str, int]:
    """Header count and body size of one answer: the floor's should match the gateway's."""
    with httpx.Client(timeout=10, trust_env=False) as client:
        answer = client.post(target.url, headers=target.headers(), content=chat_body(False))
    answer.raise_for_status()
    return {"headers": len(answer.headers), "body_bytes": len(answer.content)}


def versus(floor_points: dict[str, Any], nonstream: dict[str, Any]) -> dict[str, Any]:
    """The floor next to section 1 (pure): per concurrency, its latency over the direct
    baseline, and the gateway's CPU per request split into the server's and its own.
    A figure is None when section 1 did not measure its counterpart."""
    direct, gateway = nonstream.get("direct", {}), nonstream.get("gateway", {})
    out: dict[str, Any] = {}
    for level, point in floor_points.items():
        base, ours = direct.get(level, {}), gateway.get(level, {})
        floor_cpu = point["server_cpu_ms_per_request"]
        gateway_cpu = ours.get("server_cpu_ms_per_request")
        out[level] = {
            "floor_added_p50_ms": _minus(point["p50_ms"], base.get("p50_ms")),
            "floor_added_p99_ms": _minus(point["p99_ms"], base.get("p99_ms")),
            "gateway_added_p50_ms": _minus(ours.get("p50_ms"), base.get("p50_ms")),
            "gateway_cpu_ms_per_request": gateway_cpu,
            "gateway_own_cpu_ms_per_request": _minus(gateway_cpu, floor_cpu),
            "floor_share_of_gateway_cpu_pct": (
                round(floor_cpu / gateway_cpu * 100, 1) if gateway_cpu else None
            ),
        }
    return out


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 3)
