"""Section 7, several workers: one gateway worker against two, with the limits on Redis.

Issue 20's target: on this 2-core machine, `gateway serve --workers 2` (limits on a
`redis-server`, so every request runs the admission and settlement scripts) should
answer at least 1.7 times the requests/s of one worker at concurrency 32, with the
latency it adds at concurrency 1 (p50 over the direct baseline) unchanged; and the ratio
to LiteLLM started with the same number of workers (`--num_workers`).

Every server here is allowed on every core (one worker or two, the same cores), since
the point is what a second process does with the second core; the simulator, Redis and
the load generator keep their usual core, which they share with the gateway's workers.
So on 2 cores the ratio is below what a machine with a core per worker shows. Both
gateways run at once (idle when not measured) and their points alternate, one worker
then two at each concurrency, so both sides of the comparison see the same minute of a
machine whose load moves; the load average before and after is reported.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from bench import litellm_env, load, procs
from bench.cpu_share import CpuShare
from bench.plan import Run
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

WORKER_COUNTS = (1, 2)
CONCURRENCIES = (1, 32)
SERVING = re.compile(rb"^worker \d+ serving$", re.MULTILINE)
REDIS_START_S = 10.0


def workers(run: Run, stack: Stack) -> dict[str, Any]:
    """Start Redis and both gateways (then both LiteLLMs); measure them interleaved."""
    binary = shutil.which("redis-server")
    if binary is None:
        return {"skipped": "redis-server is not installed (scripts/system-packages.txt)"}
    cores = sorted({*run.pinning.gateway, *run.pinning.simulator, *run.pinning.load})
    load_before = os.getloadavg()
    with _redis(run, binary) as (redis_url, redis), ExitStack() as running:
        targets = {}
        for n in WORKER_COUNTS:
            targets[n] = _gateway(run, stack, n, redis_url, cores)
            running.callback(targets[n].server.stop)
        direct = {"1": wrk_point(run, stack.targets["direct"], 1, "workers")}
        others = {"simulator": stack.sim.pid, "redis": redis.pid}
        gateway = _interleaved(run, targets, others, redis_url)
    litellm = _litellm_points(run, stack, cores)
    return {
        "duration_s": run.plan.point_s,
        "server_cores": cores,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "direct": direct,
        "gateway": gateway,
        "litellm": litellm,
        "scaling": scaling(direct, gateway, litellm),
    }


def _interleaved(
    run: Run, targets: dict[int, Target], others: dict[str, int], redis_url: str | None = None
) -> dict[str, Any]:
    """Warm each up, then at each concurrency one point per worker count, back to back
    (an A/B on a machine whose load moves: both sides see the same minute). Each point
    also says where the CPU went (`bench.cpu_share`: each worker, the supervisor, the
    `others` by pid, `wrk`, the machine's idle share; "main" is the one worker or the
    supervisor of several) and, with `redis_url`, the scripts
    the server ran per request: work, which the machine's load does not skew."""
    for target in targets.values():
        load.run_wrk(
            target.url, wrk_script(run, target), connections=32, duration_s=run.plan.warmup_s
        )
    points: dict[str, Any] = {str(n): {} for n in targets}
    for concurrency in CONCURRENCIES:
        for n, target in targets.items():
            before = script_stats(redis_url) if redis_url else (0, 0)
            share = CpuShare({"main": target.server.pid, **others}, supervisor=target.server.pid)
            share.start()
            point = wrk_point(run, target, concurrency, "workers")
            point["cpu"] = share.figures(point["requests"])
            if redis_url:
                calls, usec = (a - b for a, b in zip(script_stats(redis_url), before, strict=True))
                point["redis_scripts_per_request"] = round(calls / max(point["requests"], 1), 3)
                point["redis_script_us_per_request"] = round(usec / max(point["requests"], 1), 1)
            points[str(n)][str(concurrency)] = point
    return points


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
    concurrency 32, the latency each adds at concurrency 1 (p50 over direct), and the
    ratio to LiteLLM at each worker count. None where a figure is missing."""
    base = direct.get("1", {}).get("p50_ms")

    def rps(points: dict[str, Any], n: int) -> float | None:
        value = points.get(str(n), {}).get("32", {}).get("rps")
        return float(value) if isinstance(value, int | float) else None

    def added(n: int) -> float | None:
        p50 = gateway.get(str(n), {}).get("1", {}).get("p50_ms")
        return None if p50 is None or base is None else round(p50 - base, 3)

    one, two = rps(gateway, 1), rps(gateway, 2)
    versus = {}
    for n in WORKER_COUNTS:
        ours, theirs = rps(gateway, n), rps(litellm, n)
        versus[str(n)] = round(ours / theirs, 2) if ours and theirs else None
    added_one, added_two = added(1), added(2)
    return {
        "rps_ratio_two_over_one": round(two / one, 3) if one and two else None,
        "added_p50_ms_c1": {"1": added_one, "2": added_two},
        "added_p50_change_ms": (
            None if added_one is None or added_two is None else round(added_two - added_one, 3)
        ),
        "ratio_to_litellm": versus,
    }


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


def _gateway(run: Run, stack: Stack, workers: int, redis_url: str, cores: list[int]) -> Target:
    """`gateway serve --workers N` with its limits on Redis, against the stack's
    simulator; ready once every worker has said it serves. The caller stops it."""
    port = procs.free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= GATEWAY_ENV | {
        "GATEWAY_TRACE_PAUSES": "false",
        "GATEWAY_ADMIN_KEY": ADMIN_KEY,
        "GATEWAY_REDIS_URL": redis_url,
        "GATEWAY_REDIS_PREFIX": f"bench{workers}:",
        "OPENAI_API_KEY": SIM_KEY,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{stack.sim_port}{SIM_PATH.removesuffix(CHAT_PATH)}",
    }
    argv = [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--data-dir", str(run.work / f"workers-{workers}-data"), "--workers", str(workers)]
    name = f"gateway-{workers}w"
    server = procs.start(name, argv, cores=cores, log_dir=run.work, env=env)
    try:
        procs.wait_ready(server, f"http://127.0.0.1:{port}/health", deadline_s=READY_DEADLINE_S)
        if workers > 1:  # one worker is the plain server: ready when it answers
            _wait_started(server, workers)
        key = _create_bench_key(port)
    except BaseException:
        server.stop()
        raise
    label = f"gateway, {workers} worker" + ("s" if workers > 1 else "")
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


def _litellm_points(run: Run, stack: Stack, cores: list[int]) -> dict[str, Any]:
    """LiteLLM at each worker count, interleaved like ours, when the run has it."""
    if "litellm" not in stack.targets:
        return {}
    setup = litellm_env.ensure_venv(run.work)
    if setup.executable is None:
        return {}
    with ExitStack() as running:
        targets = {}
        for n in WORKER_COUNTS:
            port = procs.free_port()
            name, label = f"litellm-{n}w", f"LiteLLM, {n} worker" + ("s" if n > 1 else "")
            proc = litellm_env.launch(
                setup,
                sim_port=stack.sim_port,
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
        return _interleaved(run, targets, {"simulator": stack.sim.pid})
