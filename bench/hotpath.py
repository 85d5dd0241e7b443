"""Section "hotpath" (issue 37): the chat hot path against the server's own floor, in one run.

The floor is Hypercorn's trio worker with an app that reads the body and answers the
same bytes (`bench/floor_app.py`: the gateway's JSON answer, the event stream the
gateway itself answered a streamed request with, a streamed speech answer). It runs on
the gateway's core beside the running gateway, and both are measured in **alternating
rounds** (the order flips every round), because on a shared machine two points taken a
minute apart see different machines. Each figure is the median of the rounds; each ratio
is the median of the rounds' own ratios (both points of a round saw the same minutes).

Per round: `wrk` at c=32 (requests/s) and at c=1 (p50, p99), the trio client streaming at
c=32 (streams/s of 20 chunks), each with the server's CPU-ms per request. Then the cache
hits as their own row (a routing rule turns the cache on for the bench's workspace for
those rounds only, so every other figure relays every request). Then speech: a second
gateway whose OpenAI is `bench/speech_source.py` (its first byte at once, almost no CPU),
against the floor's speech answer, request by request in turn at c=1, first body byte.

The targets and the guard are in `bench/checks.py` (`hotpath_checks`).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import trio

from bench import audio_ttfb, load, procs, stack
from bench.plan import Run
from bench.sections import stream_figures, wrk_point, wrk_script
from bench.sse_client import stream_load
from bench.stack import ADMIN_KEY, READY_DEADLINE_S, Stack, Target, chat_body

Figures = dict[str, Any]
UNTRACED = {"GATEWAY_TRACE_PAUSES": "false"}  # the stack's gateway has it on (section 1)
SPEECH_PATH = "/v1/audio/speech"
CORE_SERVE = "bench.core_serve"  # `gateway serve` with the families a core install mounts


def rounds_of(run: Run) -> tuple[int, float]:
    """(rounds, seconds per point): fewer and shorter with --quick."""
    return (3, 2.0) if run.plan.quick else (5, 5.0)


def hotpath(run: Run, stack_: Stack) -> Figures:
    rounds, point_s = rounds_of(run)
    with ExitStack() as cleanup:
        gateway = untraced_gateway(run, stack_, cleanup)
        events = captured_stream(gateway)
        body_file = run.work / "floor-stream-body.txt"
        body_file.write_bytes(events)
        return _measured(run, gateway, body_file, rounds, point_s)


def untraced_gateway(run: Run, stack_: Stack, cleanup: ExitStack) -> Target:
    """A gateway of the stack's settings without `GATEWAY_TRACE_PAUSES`: the stack's
    gateway has it on for the latency timeline (`bench/timeline.py`, section 1), a
    diagnostic that is off by default and wakes the loop ~100 times a second, which a
    production gateway does not pay. Composed as a core install (`bench.core_serve`:
    the extras' packages blocked, so the families they gate are not mounted), because
    issue 37's memory target is on the core's gateway process; the chat path is the
    same either way. Stopped when `cleanup` closes."""
    run.say("hot path: a gateway of its own, pause tracing off, composed as a core install")
    return stack._start_gateway(
        run.work,
        run.pinning,
        stack_.sim_port,
        cleanup,
        env=UNTRACED,
        name="hotpath-gateway",
        module=CORE_SERVE,
    )


def _measured(run: Run, gateway: Target, body_file: Path, rounds: int, point_s: float) -> Figures:
    events = body_file.read_bytes()
    with floor_server(run, gateway, body_file) as floor:
        for target in (gateway, floor):  # the new gateway's pools, caches and lazy imports
            load.run_wrk(
                target.url, wrk_script(run, target), connections=32, duration_s=run.plan.warmup_s
            )
        run.say(f"hot path: {rounds} alternating rounds of {point_s:g} s per point")
        relayed = [_round(run, gateway, floor, i, point_s) for i in range(rounds)]
        say_relayed(run, summary(relayed))
        say_sse(run, summary(relayed))
        say_memory(run, relayed)
        with cache_hits(gateway):
            hits = [_cache_round(run, gateway, floor, i, point_s) for i in range(rounds)]
        speech = speech_first_bytes(run, floor, requests=60 if run.plan.quick else 300)
    return {
        "rounds": rounds,
        "point_s": point_s,
        "gateway_env": stack.GATEWAY_ENV | UNTRACED,
        "gateway_module": CORE_SERVE,
        "stream_body_bytes": len(events),
        # At its fullest under load: the gateway's process tree (its usage writer child
        # included), and the gateway's process alone (issue 37's target is on that one).
        "gateway_rss_peak_mib": max(r["c32"]["gateway"]["rss_peak_mib"] for r in relayed),
        "gateway_process_rss_peak_mib": max(
            r["c32"]["gateway"]["process_rss_peak_mib"] for r in relayed
        ),
        "relayed": summary(relayed),
        "cache_hits": summary(hits),
        "speech": speech,
        "rounds_detail": relayed,
    }


def captured_stream(gateway: Target) -> bytes:
    """The body of one streamed answer of the gateway: what the floor answers with."""
    with httpx.Client(timeout=30, trust_env=False) as client:
        answer = client.post(gateway.url, headers=gateway.headers(), content=chat_body(True))
    answer.raise_for_status()
    return answer.content


@contextmanager
def floor_server(run: Run, like: Target, stream_body: Path | None = None) -> Iterator[Target]:
    """`bench.floor_app` on the gateway's core, as a target taking the gateway's
    requests (its path and key, so the load sends the very same bytes)."""
    port = procs.free_port()
    argv = [sys.executable, "-m", "bench.floor_app", "--host", "127.0.0.1", "--port", str(port)]
    if stream_body is not None:
        argv += ["--stream-body", str(stream_body)]
    server = procs.start("floor", argv, cores=run.pinning.gateway, log_dir=run.work)
    try:
        procs.wait_ready(server, f"http://127.0.0.1:{port}/health", deadline_s=READY_DEADLINE_S)
        yield Target("floor", "Hypercorn alone", port, like.path, like.api_key, server)
    finally:
        server.stop()


def _round(run: Run, gateway: Target, floor: Target, index: int, point_s: float) -> Figures:
    """One round: each kind of point on both targets, the order flipped every round."""
    order = (floor, gateway) if index % 2 == 0 else (gateway, floor)
    found: Figures = {}
    for kind, measure in _KINDS.items():
        for target in order:
            found.setdefault(kind, {})[target.name] = measure(run, target, point_s)
    found["load_average"] = round(_load(), 2)
    return found


def _c32(run: Run, target: Target, point_s: float) -> Figures:
    return _wrk(run, target, 32, point_s)


def _c1(run: Run, target: Target, point_s: float) -> Figures:
    return _wrk(run, target, 1, point_s)


def _wrk(run: Run, target: Target, concurrency: int, point_s: float) -> Figures:
    point = wrk_point(run, target, concurrency, "hot path", duration_s=point_s)
    kept = ("rps", "p50_ms", "p99_ms", "errors", "server_cpu_ms_per_request")
    return {k: point[k] for k in kept} | {
        "rss_peak_mib": point["server_rss_peak_mib"],
        "process_rss_peak_mib": point["server_own_rss_peak_mib"],
    }


def _sse(run: Run, target: Target, point_s: float) -> Figures:
    cpu_before = target.server.cpu_s()
    started = time.perf_counter()
    times = trio.run(stream_load, target.endpoint(stream=True), 32, point_s)
    figures = stream_figures(times, time.perf_counter() - started)
    streams = max(len(times.last_chunk_s), 1)
    cpu_ms = (target.server.cpu_s() - cpu_before) * 1000 / streams
    run.say(
        f"hot path     sse c=32 {target.label:<22} {figures['streams_per_s']:8.0f} streams/s"
        f"  {cpu_ms:.3f} CPU-ms/stream" + (f"  errors {times.errors}" if times.errors else "")
    )
    kept = ("streams_per_s", "first_chunk_p50_ms", "last_chunk_p50_ms", "errors")
    return {k: figures[k] for k in kept} | {"server_cpu_ms_per_request": round(cpu_ms, 3)}


_KINDS: dict[str, Callable[[Run, Target, float], Figures]] = {
    "c32": _c32,
    "c1": _c1,
    "sse": _sse,
}


def say_relayed(run: Run, relayed: Figures) -> None:
    """The relayed figures as the issue names them: req/s at c=32 as a ratio to the
    floor, c=1 p50 and p99 over the floor's, with both CPU-ms per request and the load."""
    c32, c1 = relayed["c32"], relayed["c1"]
    run.say(
        f"hot path     relayed req/s at c=32: {c32['ratio']:.2f}x the floor (target >= 0.75x);"
        f" CPU-ms per request: gateway {c32['gateway']['server_cpu_ms_per_request']:.3f},"
        f" floor {c32['floor']['server_cpu_ms_per_request']:.3f};"
        f" c=1 p50 {c1['added_p50_ms']:+.2f} ms (target <= +0.5),"
        f" p99 {c1['added_p99_ms']:+.2f} ms (target <= +2);"
        f" load average {relayed['load_average']:.2f}"
    )


def say_sse(run: Run, relayed: Figures) -> None:
    """The streamed figure as the issue names it: SSE streams/s as a ratio to the floor
    (the median of the rounds' own), with both CPU-ms per stream and the load."""
    sse = relayed["sse"]
    run.say(
        f"hot path     SSE streams/s at c=32 (20 chunks): {sse['ratio']:.2f}x the floor"
        f" (target >= 0.75x); CPU-ms per stream: gateway"
        f" {sse['gateway']['server_cpu_ms_per_request']:.3f},"
        f" floor {sse['floor']['server_cpu_ms_per_request']:.3f};"
        f" load average {relayed['load_average']:.2f}"
    )


def say_memory(run: Run, rounds: list[Figures]) -> None:
    """Issue 37's memory figure as the check scores it: which process, which install,
    which load, and the tree beside it."""
    process = max(r["c32"]["gateway"]["process_rss_peak_mib"] for r in rounds)
    tree = max(r["c32"]["gateway"]["rss_peak_mib"] for r in rounds)
    run.say(
        f"hot path     memory: gateway process peak RSS {process:.1f} MiB (target <= 90):"
        f" composed as a core install, during its c=32 rounds ({len(rounds)}), after"
        " the c=1 and SSE points of the rounds before; cache off, rate limits on;"
        f" process tree with the usage writer {tree:.1f} MiB; load average {_load():.2f}"
    )


def _cache_round(run: Run, gateway: Target, floor: Target, index: int, point_s: float) -> Figures:
    order = (floor, gateway) if index % 2 == 0 else (gateway, floor)
    found: Figures = {"c32": {}, "c1": {}}
    for target in order:
        found["c32"][target.name] = _c32(run, target, point_s)
        found["c1"][target.name] = _c1(run, target, point_s)
    found["load_average"] = round(_load(), 2)
    return found


@contextmanager
def cache_hits(gateway: Target) -> Iterator[None]:
    """The response cache on for the bench's workspace (a routing rule matching every
    request) for the block: every request after the first is a cache hit."""
    url = f"http://127.0.0.1:{gateway.port}/v1/management/routing-rules"
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    rule = {
        "name": "bench cache hits",
        "priority": 1,
        "conditions": {},
        "actions": {"cache": {"enabled": True, "ttl_seconds": 3600}},
    }
    with httpx.Client(timeout=10, trust_env=False) as client:
        created = client.post(url, headers=headers, json=rule)
        created.raise_for_status()
        try:
            yield
        finally:
            client.delete(f"{url}/{created.json()['id']}", headers=headers)


def speech_first_bytes(run: Run, floor: Target, *, requests: int) -> Figures:
    """First body byte of streamed speech at c=1: a gateway relaying `speech_source`
    (first byte at once) against the floor answering at once, request by request."""
    with ExitStack() as cleanup:
        source_port = audio_ttfb._start_source(run.work, run.pinning, 0, cleanup)
        second = stack._start_gateway(
            run.work, run.pinning, source_port, cleanup, env=UNTRACED, name="speech-gateway"
        )
        through = audio_ttfb.speech_endpoint(second.port, SPEECH_PATH, second.api_key)
        alone = audio_ttfb.speech_endpoint(floor.port, SPEECH_PATH, floor.api_key)
        trio.run(audio_ttfb.measure, [through, alone], 1, audio_ttfb.WARM_UP_REQUESTS)
        cpu_before = second.server.cpu_s()
        ours, theirs = trio.run(audio_ttfb.measure, [through, alone], 1, requests)
        cpu_ms = (second.server.cpu_s() - cpu_before) * 1000 / max(len(ours), 1)
    figures: Figures = {
        "requests": len(ours),
        "gateway_p50_ms": round(statistics.median(ours), 3),
        "floor_p50_ms": round(statistics.median(theirs), 3),
        "gateway_p99_ms": round(_p99(ours), 3),
        "floor_p99_ms": round(_p99(theirs), 3),
        "gateway_cpu_ms_per_request": round(cpu_ms, 3),
        "load_average": round(_load(), 2),
    }
    figures["added_p50_ms"] = round(figures["gateway_p50_ms"] - figures["floor_p50_ms"], 3)
    run.say(
        f"hot path     speech c=1 first byte: gateway {figures['gateway_p50_ms']:.2f} ms,"
        f" floor {figures['floor_p50_ms']:.2f} ms (p50)"
    )
    return figures


def summary(rounds: list[Figures]) -> Figures:
    """Per kind of point: the medians of each target's figures over the rounds, and the
    medians of the rounds' own ratios and differences (pure)."""
    out: Figures = {}
    for kind in ("c32", "c1", "sse"):
        present = [r[kind] for r in rounds if kind in r]
        if not present:
            continue
        out[kind] = {
            name: medians([p[name] for p in present]) for name in ("gateway", "floor")
        } | _paired(kind, present)
    out["load_average"] = _median([r["load_average"] for r in rounds])
    return out


def _paired(kind: str, points: list[Figures]) -> Figures:
    pairs = [(p["gateway"], p["floor"]) for p in points]
    if kind == "sse":
        ratios = [_ratio(g["streams_per_s"], f["streams_per_s"]) for g, f in pairs]
        return {"ratio": _median(ratios)}
    return {
        "ratio": _median([_ratio(g["rps"], f["rps"]) for g, f in pairs]),
        "added_p50_ms": _median([g["p50_ms"] - f["p50_ms"] for g, f in pairs]),
        "added_p99_ms": _median([g["p99_ms"] - f["p99_ms"] for g, f in pairs]),
    }


def medians(points: list[Figures]) -> Figures:
    """The median of each numeric figure over `points` (rounds of one kind)."""
    keys = [k for k, v in points[0].items() if isinstance(v, int | float)]
    return {k: _median([p[k] for p in points]) for k in keys}


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


def _ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else 0.0


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _load() -> float:
    return os.getloadavg()[0]
