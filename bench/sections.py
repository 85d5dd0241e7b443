"""The numbered sections of a run, one function each; each returns its JSON part.

1. `nonstream`: non-streamed chat with `wrk`: requests/s, p50/p99 per target and
   concurrency, and the latency each middle process adds over the direct baseline.
2. `stream`: streamed chat with the trio client: time to first chunk, time to last
   chunk and streams/s at one concurrency, per target.
3. `open_streams`: the gateway's RSS and descriptors with N slow streams held open.
4. `soak`: steady non-streamed load on the gateway; RSS and descriptors over time.
5. `ceiling`: the simulator's own requests/s, which must dwarf the gateway's.

Section 6, the HTTP server's floor, has a module of its own: `bench/floor.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import trio

from bench import load, timeline
from bench.plan import Run
from bench.procs import Proc
from bench.sampling import Sampler, percentiles_ms
from bench.sse_client import Endpoint, HeldStreams, StreamTimes, hold_streams, stream_load
from bench.stack import Stack, Target, chat_body

# Slow streams for section 3: 20 tokens at 0.1 token/s last over three minutes, far
# longer than opening and measuring takes; the client hangs up once measured.
SLOW_TOKENS_PER_SECOND = 0.1
OPENING_AT_ONCE = 64  # below Hypercorn's listen backlog (100)
FD_SETTLE_S = 15.0
# The load point whose requests the latency-over-time chart draws, one dot each.
TIMELINE_CONCURRENCY = 32
FD_SLACK = 20  # descriptors the gateway may hold beyond its idle count once settled


def wrk_script(run: Run, target: Target) -> Path:
    # By port too: a section may start a gateway of its own (another key) beside the stack's.
    path = run.work / f"post-{target.name}-{target.port}.lua"
    if not path.exists():
        load.write_script(path, chat_body(stream=False), target.headers())
    return path


# -- 1. non-streamed ------------------------------------------------------------------------


def nonstream(run: Run, stack: Stack) -> dict[str, Any]:
    points: dict[str, dict[str, Any]] = {name: {} for name in stack.targets}
    for target in stack.targets.values():
        load.run_wrk(
            target.url, wrk_script(run, target), connections=32, duration_s=run.plan.warmup_s
        )
    for concurrency in run.plan.concurrencies:
        for target in stack.targets.values():
            points[target.name][str(concurrency)] = _nonstream_point(
                run, stack, target, concurrency
            )
    return {
        "duration_s": run.plan.point_s,
        "points": points,
        "overhead": _overheads(points, ("p50_ms", "p99_ms")),
    }


def _nonstream_point(run: Run, stack: Stack, target: Target, concurrency: int) -> dict[str, Any]:
    upstream_before = stack.upstream_requests()
    point = wrk_point(run, target, concurrency, "non-streamed")
    # Requests that reached the simulator per request answered: 1.0 unless something
    # (a cache, retries) answers without, or with more than one, upstream call.
    upstream_share = (stack.upstream_requests() - upstream_before) / max(point["requests"], 1)
    return point | {"upstream_calls_per_request": round(upstream_share, 3)}


def wrk_point(
    run: Run, target: Target, concurrency: int, section: str, duration_s: float | None = None
) -> dict[str, Any]:
    """One `wrk` load point of non-streamed chat against `target` (for the plan's point
    length unless `duration_s` is given): the load figures, the server's CPU milliseconds
    per request and its peak RSS (used by sections 1, 6 and 7)."""
    cpu_before = target.server.cpu_s()
    log_offset = timeline.log_size(target.server.log_path)
    with Sampler([target.server]) as sampler:
        result = load.run_wrk(
            target.url,
            wrk_script(run, target),
            connections=concurrency,
            duration_s=run.plan.point_s if duration_s is None else duration_s,
        )
    cpu_ms = (target.server.cpu_s() - cpu_before) * 1000 / max(result.requests, 1)
    run.say(
        f"{section:<12} c={concurrency:<3} {target.label:<22} {result.rps:8.0f} req/s"
        f"  p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms"
        f"  {cpu_ms:.3f} CPU-ms/req" + (f"  errors {result.errors}" if result.errors else "")
    )
    return (
        result.to_json()
        | {
            "server_rss_peak_mib": round(sampler.peak_rss(target.server.name), 1),
            "server_own_rss_peak_mib": round(sampler.peak_own_rss(target.server.name), 1),
            "server_cpu_ms_per_request": round(cpu_ms, 3),
        }
        | _timeline(target, log_offset, keep_points=concurrency == TIMELINE_CONCURRENCY)
    )


def _timeline(target: Target, log_offset: int, *, keep_points: bool) -> dict[str, Any]:
    """The gateway's view of the point's requests and its pauses (`bench/timeline.py`)."""
    if target.name != "gateway":
        return {}
    found = timeline.figures(timeline.read(target.server.log_path, log_offset))
    if not keep_points:
        found.pop("points", None)
        found.pop("pause_points", None)
    return {"timeline": found}


def _overheads(points: dict[str, dict[str, Any]], fields: tuple[str, ...]) -> dict[str, Any]:
    """Per target and concurrency: its figure minus the direct baseline's."""
    base = points.get("direct", {})
    overhead: dict[str, Any] = {}
    for name, by_level in points.items():
        if name == "direct":
            continue
        overhead[name] = {
            level: {f: round(point[f] - base[level][f], 3) for f in fields}
            for level, point in by_level.items()
            if level in base
        }
    return overhead


# -- 2. streamed ------------------------------------------------------------------------------


def stream(run: Run, stack: Stack) -> dict[str, Any]:
    concurrency = run.plan.stream_concurrency
    points = {
        target.name: {str(concurrency): _stream_point(run, target, concurrency)}
        for target in stack.targets.values()
    }
    fields = ("first_chunk_p50_ms", "first_chunk_p99_ms", "last_chunk_p50_ms", "last_chunk_p99_ms")
    return {
        "concurrency": concurrency,
        "duration_s": run.plan.point_s,
        "points": points,
        "overhead": _overheads(points, fields),
    }


def _stream_point(run: Run, target: Target, concurrency: int) -> dict[str, Any]:
    endpoint = target.endpoint(stream=True)
    cpu_before = target.server.cpu_s()
    with Sampler([target.server]) as sampler:
        started = time.perf_counter()
        times = trio.run(stream_load, endpoint, concurrency, run.plan.point_s)
        elapsed = time.perf_counter() - started
    figures = stream_figures(times, elapsed)
    cpu_ms = (target.server.cpu_s() - cpu_before) * 1000 / max(len(times.last_chunk_s), 1)
    figures["server_cpu_ms_per_stream"] = round(cpu_ms, 3)
    run.say(
        f"streamed     c={concurrency:<3} {target.label:<22}"
        f" {figures['streams_per_s']:8.0f} streams/s"
        f"  first chunk p50 {figures['first_chunk_p50_ms']:7.2f} ms"
        f"  last chunk p50 {figures['last_chunk_p50_ms']:7.2f} ms"
        + (f"  errors {times.errors}" if times.errors else "")
    )
    return figures | {"server_rss_peak_mib": round(sampler.peak_rss(target.server.name), 1)}


def stream_figures(times: StreamTimes, elapsed_s: float) -> dict[str, Any]:
    first = percentiles_ms(times.first_chunk_s, load.PERCENTILES)
    last = percentiles_ms(times.last_chunk_s, load.PERCENTILES)
    return {
        "duration_s": round(elapsed_s, 3),
        "completed": len(times.last_chunk_s),
        "errors": times.errors,
        "error_samples": times.error_samples,
        "streams_per_s": round(len(times.last_chunk_s) / elapsed_s, 1),
        "first_chunk_p50_ms": first["50"],
        "first_chunk_p99_ms": first["99"],
        "last_chunk_p50_ms": last["50"],
        "last_chunk_p99_ms": last["99"],
        "first_chunk_percentiles_ms": first,
        "last_chunk_percentiles_ms": last,
    }


# -- 3. open streams --------------------------------------------------------------------------


def open_streams(run: Run, stack: Stack) -> dict[str, Any]:
    gateway = stack.targets["gateway"]
    stack.sim_control("config", {"tokens_per_second": SLOW_TOKENS_PER_SECOND})
    try:
        points = {str(n): _held_point(run, stack, gateway, n) for n in run.plan.open_streams}
    finally:
        stack.sim_control("config", {"tokens_per_second": 0})
    return {"slow_tokens_per_second": SLOW_TOKENS_PER_SECOND, "points": points}


def _held_point(run: Run, stack: Stack, gateway: Target, count: int) -> dict[str, Any]:
    server = gateway.server
    before = {"rss_before_mib": round(server.rss_mib(), 1), "fds_before": server.open_fds()}
    deadline = run.plan.open_deadline_s  # a stuck gateway must not hang the run
    run.say(f"open streams: opening {count} slow streams through the gateway...")

    def measure() -> dict[str, Any]:
        stats = stack.sim_control("stats")
        return {
            "rss_open_mib": round(server.rss_mib(), 1),
            "fds_open": server.open_fds(),
            "sim_open_connections": stats["open_connections"] if isinstance(stats, dict) else None,
        }

    held, open_s, during = trio.run(_hold, gateway.endpoint(stream=True), count, deadline, measure)
    after = _settled(server, before["fds_before"])
    first = percentiles_ms(held.times.first_chunk_s, (50, 99))
    run.say(
        f"open streams: {held.opened}/{count} open in {open_s:.1f} s,"
        f" gateway RSS {during['rss_open_mib']:.0f} MiB, {during['fds_open']} fds"
        f" (after release: {after['rss_after_mib']:.0f} MiB, {after['fds_after']} fds)"
    )
    return (
        {
            "wanted": count,
            "opened": held.opened,
            "failed": held.times.errors,
            "ended_early": held.ended_early,
            "error_samples": held.times.error_samples,
            "open_time_s": round(open_s, 2),
            "first_chunk_p50_ms": first["50"],
            "first_chunk_p99_ms": first["99"],
        }
        | before
        | during
        | after
    )


async def _hold(
    endpoint: Endpoint, count: int, deadline_s: float, measure: Callable[[], dict[str, Any]]
) -> tuple[HeldStreams, float, dict[str, Any]]:
    """Open the streams, measure once all are open (or at the deadline), hang up."""
    held = HeldStreams(count)
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(hold_streams, opening_at_once=OPENING_AT_ONCE), endpoint, held)
        with trio.move_on_after(deadline_s):
            await held.all_open.wait()
        open_s = time.perf_counter() - started
        await trio.sleep(1.0)  # let the last streams' buffers settle before sampling
        during = await trio.to_thread.run_sync(measure)
        nursery.cancel_scope.cancel()
    return held, open_s, during


def _settled(server: Proc, fds_before: float) -> dict[str, Any]:
    """The gateway once the hung-up streams are cleaned up: its descriptors back within
    `FD_SLACK` of the count before the streams (or `FD_SETTLE_S` passed), and how long
    that took. Closing 5,000 streams takes several seconds on one core, with pauses of
    over a second while the usage log writes their records, so neither a loose threshold
    nor "stopped falling" would wait for the end of it."""
    started = time.monotonic()
    while server.open_fds() > fds_before + FD_SLACK and time.monotonic() - started < FD_SETTLE_S:
        time.sleep(0.1)
    return {
        "rss_after_mib": round(server.rss_mib(), 1),
        "fds_after": server.open_fds(),
        "settle_s": round(time.monotonic() - started, 1),
    }


# -- 4. soak ----------------------------------------------------------------------------------


SOAK_CONCURRENCY = 32


def soak(run: Run, stack: Stack) -> dict[str, Any]:
    gateway = stack.targets["gateway"]
    server = gateway.server
    idle_before = server.open_fds()
    run.say(f"soak: {run.plan.soak_s:.0f} s of non-streamed load at c={SOAK_CONCURRENCY}")
    with Sampler([server], every_s=run.plan.soak_sample_s) as sampler:
        result = _wrk_with_progress(run, gateway, server)
    time.sleep(2.0)
    series = [(s.at_s, s.rss_mib, s.fds) for s in sampler.samples[server.name]]
    figures = soak_figures(series, warmup_s=max(2.0, run.plan.soak_s / 10), until_s=run.plan.soak_s)
    run.say(
        f"soak: RSS {figures['rss_start_mib']:.1f} -> {figures['rss_end_mib']:.1f} MiB"
        f" ({figures['rss_growth_pct']:+.1f}%), fds {figures['fds_start']} -> {figures['fds_end']}"
    )
    return {
        "duration_s": run.plan.soak_s,
        "concurrency": SOAK_CONCURRENCY,
        "load": result.to_json(),
        "fds_idle_before": idle_before,
        "fds_idle_after": server.open_fds(),
        "samples": [[round(t, 2), round(rss, 2), fds] for t, rss, fds in series],
    } | figures


def _wrk_with_progress(run: Run, gateway: Target, server: Proc) -> load.WrkResult:
    """Run the soak's `wrk` in a thread, printing the gateway's memory meanwhile."""
    every = max(5.0, run.plan.soak_s / 10)
    script = wrk_script(run, gateway)
    with ThreadPoolExecutor(1) as pool:
        future: Future[load.WrkResult] = pool.submit(
            load.run_wrk,
            gateway.url,
            script,
            connections=SOAK_CONCURRENCY,
            duration_s=run.plan.soak_s,
        )
        while not _done_within(future, every):
            run.say(f"soak: gateway RSS {server.rss_mib():.1f} MiB, {server.open_fds()} fds")
        return future.result()


def _done_within(future: Future[Any], seconds: float) -> bool:
    try:
        future.result(timeout=seconds)
    except TimeoutError:
        return False
    return True


def soak_figures(
    series: list[tuple[float, float, int]], *, warmup_s: float, until_s: float
) -> dict[str, Any]:
    """Start and end of the steady part (after the warm-up, before the load stops): the
    medians of its first and last thirds, so one sample caught mid-allocation does not
    decide. Descriptors come and go with pooled upstream connections: the spread seen
    in the first third is their noise, and only growth beyond it counts."""
    steady = [s for s in series if warmup_s <= s[0] <= until_s] or series
    third = max(1, len(steady) // 3)
    head, tail = steady[:third], steady[-third:]
    rss_start, rss_end = _median([s[1] for s in head]), _median([s[1] for s in tail])
    fds_head = [s[2] for s in head]
    return {
        "warmup_s": warmup_s,
        "rss_start_mib": round(rss_start, 2),
        "rss_end_mib": round(rss_end, 2),
        "rss_peak_mib": round(max(s[1] for s in series), 2),
        "rss_growth_pct": round((rss_end - rss_start) / rss_start * 100, 2),
        "fds_start": int(_median(fds_head)),
        "fds_end": int(_median([s[2] for s in tail])),
        "fds_noise": max(fds_head) - min(fds_head),
    }


def _median(values: list[float] | list[int]) -> float:
    ordered = sorted(values)
    return float(ordered[len(ordered) // 2])


# -- 5. simulator ceiling ---------------------------------------------------------------------


def ceiling(run: Run, stack: Stack, measured: dict[str, Any]) -> dict[str, Any]:
    """The simulator alone on its core with `wrk` on the other (the idle gateway's),
    next to section 1's direct runs, where `wrk` shares the simulator's core; the
    better of the two is the ceiling."""
    direct = stack.targets["direct"]
    apart = {}
    for concurrency in run.plan.ceiling_concurrencies:
        cpu_before = direct.server.cpu_s()
        result = load.run_wrk(
            direct.url,
            wrk_script(run, direct),
            connections=concurrency,
            duration_s=run.plan.point_s,
            cores=run.pinning.gateway,
        )
        cpu_s = direct.server.cpu_s() - cpu_before
        apart[str(concurrency)] = result.to_json() | {
            "requests_per_cpu_s": round(result.requests / cpu_s, 1) if cpu_s else None
        }
        run.say(f"simulator ceiling c={concurrency}: {result.rps:.0f} req/s")
    shared = measured.get("nonstream", {}).get("points", {}).get("direct", {})
    best = max(p["rps"] for p in [*apart.values(), *shared.values()])
    gateway_rps = _gateway_rps(measured)
    return {
        "load_cores": list(run.pinning.gateway),
        "simulator_cores": list(run.pinning.simulator),
        "points": apart,
        "shared_core_rps": {level: p["rps"] for level, p in shared.items()},
        "best_rps": best,
        "gateway_rps_c32": gateway_rps,
        "ratio_to_gateway": round(best / gateway_rps, 1) if gateway_rps else None,
    }


def _gateway_rps(measured: dict[str, Any]) -> float | None:
    point = measured.get("nonstream", {}).get("points", {}).get("gateway", {}).get("32")
    return point["rps"] if point else None
