"""Section 7, several workers: one gateway worker against two, with the limits on Redis.

Issue 20's target: on this 2-core machine, `gateway serve --workers 2` (limits on a
`redis-server`, so every request runs the admission and settlement scripts) should
answer at least 1.7 times the requests/s of one worker at concurrency 32, with the
latency it adds at concurrency 1 (p50 over the direct baseline) unchanged; and the ratio
to LiteLLM started with the same number of workers (`--num_workers`).

Every server here is allowed on every core (one worker or two, the same cores), since
the point is what a second process does with the second core; Redis, the upstream and
the load generator keep their usual core, which they share with the gateway's workers.
So on 2 cores the ratio is below what a machine with a core per worker shows, and the
upstream's own CPU lowers it further: the upstream is `bench.static_upstream` (a canned
answer, ~0.1 CPU-ms per request), and the same gateways are measured against the
simulator (0.26-0.41 CPU-ms per request) afterwards, at c=32, to show that cost. Both
gateways run at once (idle when not measured) and their points alternate in rounds, one
worker then two, several times at each concurrency, so both sides of the comparison see
the same minutes of a machine whose load and host move; the load average before and
after, and the share of the cores the hypervisor stole during each round, are reported.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import Any

from bench import litellm_env, load, procs
from bench.cpu_share import CpuShare
from bench.plan import Plan, Run
from bench.sections import wrk_point, wrk_script
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

WORKER_COUNTS = (1, 2, 4)  # issue 37 point 4 adds four (more workers than cores)
LITELLM_COUNTS = (1, 2)
CONCURRENCIES = (1, 32)
ROUNDS, ROUNDS_QUICK = 6, 3  # alternating rounds per concurrency: twice a point's time
SERVING = re.compile(rb"^worker \d+ serving$", re.MULTILINE)
REDIS_START_S = 10.0


def workers(run: Run, stack: Stack) -> dict[str, Any]:
    """Start Redis and the static upstream, then both gateways (then both LiteLLMs)
    against that upstream, and measure them interleaved; then both gateways again with
    the simulator as upstream, at c=32 (what the upstream's own CPU does to the ratio)."""
    binary = shutil.which("redis-server")
    if binary is None:
        return {"skipped": "redis-server is not installed (scripts/test-system-packages.txt)"}
    cores = sorted({*run.pinning.gateway, *run.pinning.simulator, *run.pinning.load})
    load_before = os.getloadavg()
    with _redis(run, binary) as (redis_url, redis), static_upstream(run) as upstream:
        direct = {"1": wrk_point(run, upstream, 1, "workers")}
        others = {"upstream": upstream.server.pid, "redis": redis.pid}
        gateway = _measured(run, upstream.port, "static", others, redis_url, cores)
        litellm = _litellm_points(
            run, stack, upstream.port, cores, {"upstream": others["upstream"]}
        )
        others = {"simulator": stack.sim.pid, "redis": redis.pid}
        simulated = _measured(run, stack.sim_port, "sim", others, redis_url, cores, (32,))
    rounds, seconds = round_plan(run.plan)
    return {
        "rounds": rounds,
        "round_s": seconds,
        "server_cores": cores,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "direct": direct,
        "gateway": gateway,
        "litellm": litellm,
        "scaling": scaling(direct, gateway, litellm),
        "gateway_with_simulator": simulated,
        "scaling_with_simulator": scaling({}, simulated, {}),
    }


def _measured(
    run: Run,
    upstream_port: int,
    upstream: str,
    others: dict[str, int],
    redis_url: str,
    cores: list[int],
    concurrencies: tuple[int, ...] = CONCURRENCIES,
) -> dict[str, Any]:
    """One gateway per worker count against `upstream_port`, measured interleaved,
    stopped on the way out."""
    with ExitStack() as running:
        targets = {}
        for n in WORKER_COUNTS:
            targets[n] = _gateway(run, upstream_port, upstream, n, redis_url, cores)
            running.callback(targets[n].server.stop)
        return interleaved(run, targets, others, redis_url, concurrencies)


def interleaved(
    run: Run,
    targets: dict[Any, Target],
    others: dict[str, int],
    redis_url: str | None = None,
    concurrencies: tuple[int, ...] = CONCURRENCIES,
) -> dict[str, Any]:
    """Warm each up, then at each concurrency several rounds of one short point per
    worker count, back to back (an A/B on a VM whose speed moves: the host's steal went
    from 0 to 18 % of a core between adjacent 15 s points, and one pair of points gave
    ratios from 1.3x to 2.3x). Each worker count's figure combines its rounds (requests
    over time; the median of their p50s), and the rounds are kept. Each round also says
    where the CPU went (`bench.cpu_share`: each worker, the supervisor, the `others` by
    pid, `wrk`, the machine's idle and stolen shares; "main" is the one worker or the
    supervisor of several) and, with `redis_url`, the scripts the server ran per
    request: work, which the machine's load does not skew."""
    for target in targets.values():
        load.run_wrk(
            target.url, wrk_script(run, target), connections=32, duration_s=run.plan.warmup_s
        )
    rounds, seconds = round_plan(run.plan)
    points: dict[str, Any] = {str(n): {} for n in targets}
    for concurrency in concurrencies:
        measured: dict[Any, list[dict[str, Any]]] = {n: [] for n in targets}
        for _ in range(rounds):
            for n, target in targets.items():
                point = _round(run, target, concurrency, seconds, others, redis_url)
                measured[n].append(point)
        for n, taken in measured.items():
            points[str(n)][str(concurrency)] = combined(taken)
    return points


def round_plan(plan: Plan) -> tuple[int, float]:
    """How many alternating rounds per concurrency, and each round's point length (whole
    seconds, `wrk`'s unit): together twice the plan's point length per worker count."""
    rounds = ROUNDS_QUICK if plan.quick else ROUNDS
    return rounds, max(1.0, round(plan.point_s * 2 / rounds))


def _round(
    run: Run,
    target: Target,
    concurrency: int,
    seconds: float,
    others: dict[str, int],
    redis_url: str | None,
) -> dict[str, Any]:
    """One short point with its CPU shares and, with `redis_url`, its Redis scripts."""
    before = script_stats(redis_url) if redis_url else (0, 0)
    share = CpuShare({"main": target.server.pid, **others}, supervisor=target.server.pid)
    share.start()
    point = wrk_point(run, target, concurrency, "workers", duration_s=seconds)
    point["cpu"] = share.figures(point["requests"])
    if redis_url:
        calls, usec = (a - b for a, b in zip(script_stats(redis_url), before, strict=True))
        point["redis_scripts"] = calls
        point["redis_script_us"] = usec
    return point


def combined(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One worker count's figures at one concurrency from its rounds (pure): requests/s
    is all requests over all the time, per-request figures are weighted by requests,
    latency percentiles are the median of the rounds'; each round's own figures stay
    under `rounds`, with the machine's stolen share."""
    requests = sum(int(r["requests"]) for r in rounds)
    per = max(requests, 1)

    def weighted(value: Callable[[dict[str, Any]], float]) -> float:
        return round(sum(value(r) * int(r["requests"]) for r in rounds) / per, 3)

    def share(name: str) -> float:
        return round(statistics.fmean(r["cpu"][name] for r in rounds), 3)

    names = {name for r in rounds for name in r["cpu"]["cpu_ms_per_request"]}
    point: dict[str, Any] = {
        "requests": requests,
        "duration_s": round(sum(r["duration_s"] for r in rounds), 3),
        "errors": sum(r["errors"] for r in rounds),
        "rps": round(requests / max(sum(r["duration_s"] for r in rounds), 1e-9), 1),
        "p50_ms": round(statistics.median(r["p50_ms"] for r in rounds), 3),
        "p99_ms": round(statistics.median(r["p99_ms"] for r in rounds), 3),
        "server_cpu_ms_per_request": weighted(lambda r: r["server_cpu_ms_per_request"]),
        "cpu": {
            "cpu_ms_per_request": {
                name: weighted(partial(_cpu_ms, name)) for name in sorted(names)
            },
            "machine_idle_share": share("machine_idle_share"),
            "machine_steal_share": share("machine_steal_share"),
        },
        "rounds": [_round_summary(r) for r in rounds],
    }
    if all("redis_scripts" in r for r in rounds):
        point["redis_scripts_per_request"] = round(sum(r["redis_scripts"] for r in rounds) / per, 3)
        point["redis_script_us_per_request"] = round(
            sum(r["redis_script_us"] for r in rounds) / per, 1
        )
    return point


def _cpu_ms(name: str, point: dict[str, Any]) -> float:
    """One process's CPU-ms per request in a round (0 where it did not run)."""
    return float(point["cpu"]["cpu_ms_per_request"].get(name, 0.0))


def _round_summary(point: dict[str, Any]) -> dict[str, Any]:
    """A round as the combined point keeps it: its figures, and its CPU shares, which
    `bound_by_work` reads (without them every bound was "not measured")."""
    return {
        "rps": point["rps"],
        "p50_ms": point["p50_ms"],
        "server_cpu_ms_per_request": point["server_cpu_ms_per_request"],
        "machine_steal_share": point["cpu"]["machine_steal_share"],
        "cpu": point["cpu"],
    }


def _bulk_end(data: bytes) -> int:
    """Where a bulk reply (`$<length>\\r\\n<payload>\\r\\n`) whose head is in `data` ends."""
    head = data.split(b"\r\n", 1)[0]
    return len(head) + 2 + int(head[1:]) + 2


def script_stats(redis_url: str) -> tuple[int, int]:
    """EVALSHA and EVAL calls the server has run so far, and the microseconds it spent
    running them (`INFO commandstats`; the rest of its CPU is reading and writing)."""
    port = int(redis_url.rsplit(":", 1)[1].split("/", 1)[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"INFO commandstats\r\n")
        data = b""
        while b"\r\n" not in data or len(data) < _bulk_end(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    calls = usec = 0
    for line in data.decode(errors="replace").splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
            calls += int(line.split("calls=", 1)[1].split(",", 1)[0])
            usec += int(line.split("usec=", 1)[1].split(",", 1)[0])
    return calls, usec


def scaling(
    direct: dict[str, Any], gateway: dict[str, Any], litellm: dict[str, Any]
) -> dict[str, Any]:
    """The figures the issue asks for (pure): requests/s of two workers over one at
    concurrency 32, the latency each adds at concurrency 1 (p50 over direct) and how
    much it changes with two, and the ratio to LiteLLM at each worker count. None where
    a figure is missing.

    With rounds, the change of the added p50 is the median of each round's difference
    (two workers' p50 minus the one worker's just before): both points of a round see
    the same seconds of the host, so the difference cancels what the host did to that
    round, and the median ignores the rounds where its steal hit one side only. The
    requests/s ratio is all requests over all the time; each round's ratio is listed."""
    base = direct.get("1", {}).get("p50_ms")

    def rps(points: dict[str, Any], n: int) -> float | None:
        value = points.get(str(n), {}).get("32", {}).get("rps")
        return float(value) if isinstance(value, int | float) else None

    def added(n: int) -> float | None:
        p50 = gateway.get(str(n), {}).get("1", {}).get("p50_ms")
        return None if p50 is None or base is None else round(p50 - base, 3)

    def paired(concurrency: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        one = gateway.get("1", {}).get(concurrency, {}).get("rounds", [])
        two = gateway.get("2", {}).get(concurrency, {}).get("rounds", [])
        return list(zip(one, two, strict=False))

    one, two = rps(gateway, 1), rps(gateway, 2)
    ratios = [round(b["rps"] / a["rps"], 3) for a, b in paired("32") if a["rps"]]
    changes = [round(b["p50_ms"] - a["p50_ms"], 3) for a, b in paired("1")]
    versus = {}
    for n in LITELLM_COUNTS:
        ours, theirs = rps(gateway, n), rps(litellm, n)
        versus[str(n)] = round(ours / theirs, 2) if ours and theirs else None
    added_one, added_two = added(1), added(2)
    change = None if added_one is None or added_two is None else round(added_two - added_one, 3)
    four = rps(gateway, 4)
    return {
        "rps_ratio_two_over_one": round(two / one, 3) if one and two else None,
        "rps_ratio_four_over_one": round(four / one, 3) if one and four else None,
        "rps_by_workers": {str(n): rps(gateway, n) for n in WORKER_COUNTS},
        "bound_by_work": {str(n): bound_by_work(gateway, n) for n in WORKER_COUNTS[1:]},
        "rps_ratio_by_round": ratios,
        "added_p50_ms_c1": {"1": added_one, "2": added_two},
        "added_p50_change_ms": round(statistics.median(changes), 3) if changes else change,
        "added_p50_change_by_round_ms": changes,
        "ratio_to_litellm": versus,
    }


def bound_by_work(gateway: dict[str, Any], workers: int) -> float | None:
    """The most `workers` workers can do over one, from what one worker's rounds at c=32
    cost (pure): each request takes the worker's CPU-ms `g` and, with the upstream,
    Redis and the load generator, `total`; on `cores` cores no count of workers serves
    more than `cores / total` requests a second, and one worker serves `1 / g` when its
    core is the bottleneck. So the ratio is at most `min(workers, cores * g / total)`."""
    rounds = gateway.get("1", {}).get("32", {}).get("rounds", [])
    bounds = []
    for point in rounds:
        cpu = point.get("cpu") or {}
        worker = (cpu.get("cpu_ms_per_request") or {}).get("main")
        total, cores = cpu.get("cpu_ms_per_request_total"), cpu.get("cores")
        if worker and total and cores:
            bounds.append(min(workers, cores * worker / total))
    return round(statistics.median(bounds), 2) if bounds else None


# -- the servers ---------------------------------------------------------------------------


@contextmanager
def _redis(run: Run, binary: str) -> Iterator[tuple[str, procs.Proc]]:
    """A `redis-server` on a free loopback port without persistence, on the simulator's
    core; stopped on the way out."""
    port = procs.free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    argv += ["no", "--dir", str(run.work)]
    server = procs.start("redis", argv, cores=run.pinning.simulator, log_dir=run.work)
    try:
        _wait_ping(server, port)
        yield f"redis://127.0.0.1:{port}/0", server
    finally:
        server.stop()


@contextmanager
def static_upstream(run: Run) -> Iterator[Target]:
    """`bench.static_upstream` on a free loopback port, on the simulator's core, as a
    target (the direct baseline); stopped on the way out."""
    port = procs.free_port()
    argv = [sys.executable, "-m", "bench.static_upstream", "--port", str(port)]
    server = procs.start("static-upstream", argv, cores=run.pinning.simulator, log_dir=run.work)
    try:
        procs.wait_ready(server, f"http://127.0.0.1:{port}/health", deadline_s=READY_DEADLINE_S)
        yield Target("direct-static", "direct to static upstream", port, SIM_PATH, SIM_KEY, server)
    finally:
        server.stop()


def _wait_ping(server: procs.Proc, port: int) -> None:
    give_up = time.monotonic() + REDIS_START_S
    while time.monotonic() < give_up:
        server.check_alive()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise procs.ProcessFailed(f"redis-server did not answer on port {port}")


def _gateway(
    run: Run, upstream_port: int, upstream: str, workers: int, redis_url: str, cores: list[int]
) -> Target:
    """`gateway serve --workers N` with its limits on Redis, against the OpenAI API on
    `upstream_port` (`upstream` names it); ready once every worker has said it serves.
    The caller stops it."""
    port = procs.free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= GATEWAY_ENV | {
        "GATEWAY_TRACE_PAUSES": "false",
        "GATEWAY_ADMIN_KEY": ADMIN_KEY,
        "GATEWAY_REDIS_URL": redis_url,
        "GATEWAY_REDIS_PREFIX": f"bench-{upstream}-{workers}:",
        "OPENAI_API_KEY": SIM_KEY,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream_port}{SIM_PATH.removesuffix(CHAT_PATH)}",
    }
    argv = [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port)]
    data = run.work / f"workers-{upstream}-{workers}-data"
    argv += ["--data-dir", str(data), "--workers", str(workers)]
    name = f"gateway-{workers}w-{upstream}"
    server = procs.start(name, argv, cores=cores, log_dir=run.work, env=env)
    try:
        # N workers import the gateway at once on the same cores: N starts' CPU before
        # the first answers (on the loaded machine of 2026-11-27 21:25, load average 25,
        # two workers were not ready after 60 s).
        deadline_s = READY_DEADLINE_S * workers
        procs.wait_ready(server, f"http://127.0.0.1:{port}/health", deadline_s=deadline_s)
        if workers > 1:  # one worker is the plain server: ready when it answers
            _wait_started(server, workers)
        key = _create_bench_key(port)
    except BaseException:
        server.stop()
        raise
    label = f"gateway, {workers} worker" + ("s" if workers > 1 else "") + f", {upstream}"
    return Target(name, label, port, "/v1" + CHAT_PATH, key, server)


def _serving(log: bytes) -> int:
    return len(SERVING.findall(log))


def _wait_started(
    server: procs.Proc, workers: int, started: Callable[[bytes], int] = _serving
) -> None:
    """Every worker accepts on the one socket once it serves; one still starting would
    leave the whole load to the others. `started` counts them in the server's log."""
    give_up = time.monotonic() + max(READY_DEADLINE_S, litellm_env.READY_DEADLINE_S)
    while started(server.log_path.read_bytes()) < workers:
        server.check_alive()
        if time.monotonic() > give_up:
            message = f"{server.name}: not every worker serves\n{server.log_tail()}"
            raise procs.ProcessFailed(message)
        time.sleep(0.1)


def _litellm_points(
    run: Run, stack: Stack, upstream_port: int, cores: list[int], others: dict[str, int]
) -> dict[str, Any]:
    """LiteLLM at each worker count against `upstream_port`, interleaved like ours, when
    the run has it."""
    if "litellm" not in stack.targets:
        return {}
    setup = litellm_env.ensure_venv(run.work)
    if setup.executable is None:
        return {}
    with ExitStack() as running:
        targets = {}
        for n in LITELLM_COUNTS:
            port = procs.free_port()
            name, label = f"litellm-{n}w", f"LiteLLM, {n} worker" + ("s" if n > 1 else "")
            proc = litellm_env.launch(
                setup,
                sim_port=upstream_port,
                port=port,
                cores=tuple(cores),
                work=run.work,
                workers=n,
                name=name,
            )
            running.callback(proc.stop)
            procs.wait_ready(
                proc, litellm_env.ready_url(port), deadline_s=litellm_env.READY_DEADLINE_S
            )
            if n > 1:  # one worker is the plain server: ready when it answers
                _wait_started(proc, n, litellm_env.started_workers)
            targets[n] = Target(name, label, port, "/v1" + CHAT_PATH, litellm_env.MASTER_KEY, proc)
        return interleaved(run, targets, others)
