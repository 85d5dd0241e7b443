"""`python -m bench.postgres [--quick]`: the store on PostgreSQL against SQLite, and two
nodes on one PostgreSQL (issue 34).

1. One node on SQLite against one node on PostgreSQL: non-streamed chat at concurrency
   32 through the same static upstream (`bench.static_upstream`, a canned answer), so
   what differs is the store: the usage log's batches (COPY and rollup upserts on
   PostgreSQL, `executemany` on SQLite), the key's `last_used` flushes. Target: within
   10 % in requests/s. Both servers are durable as deployed: SQLite `synchronous=FULL`
   (fsync per commit), PostgreSQL with `fsync` and `synchronous_commit` on.
2. Two nodes (two `gateway serve` processes on two ports, one PostgreSQL store, limits on
   one Redis) against one node on the same PostgreSQL and Redis: requests/s at
   concurrency 32 in all (16 on each node), and the ratio two over one.

The two sides of each comparison alternate in short rounds (the machine is shared and its
speed moves from one minute to the next), and their requests over their time are
compared. Everything runs on this machine's cores: the gateways, the upstream, the
database servers and `wrk`; the figures are indicative of this machine at this moment,
not of a deployment. Results go to `bench/results/postgres-<date>.json` and the summary
to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from bench import load, procs, stack
from bench.workers import _wait_ping
from tests.postgres_server import PostgresServer, binaries

RESULTS = Path(__file__).resolve().parent / "results"
CONCURRENCY = 32
TARGET_WITHIN = 0.10
# Every node of one store holds the deployment's master key (docs/postgresql.md).
MASTER_KEY = Fernet.generate_key().decode()


@contextmanager
def _server(
    name: str, argv: list[str], work: Path, env: dict[str, str] | None = None
) -> Iterator[procs.Proc]:
    proc = procs.start(name, argv, cores=tuple(range(os.cpu_count() or 1)), log_dir=work, env=env)
    try:
        yield proc
    finally:
        proc.stop()


@contextmanager
def _gateway(
    name: str, work: Path, upstream_port: int, extra: dict[str, str]
) -> Iterator[tuple[str, str]]:
    """`gateway serve` against the static upstream; (its chat URL, a bench key)."""
    port = procs.free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= (
        stack.GATEWAY_ENV
        | extra
        | {
            "GATEWAY_TRACE_PAUSES": "false",
            "GATEWAY_ADMIN_KEY": stack.ADMIN_KEY,
            "OPENAI_API_KEY": stack.SIM_KEY,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream_port}{stack.SIM_PATH.removesuffix(stack.CHAT_PATH)}",
        }
    )
    argv = [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--data-dir", str(work / f"{name}-data")]
    with _server(name, argv, work, env) as proc:
        procs.wait_ready(proc, f"http://127.0.0.1:{port}/health", deadline_s=stack.READY_DEADLINE_S)
        yield f"http://127.0.0.1:{port}/v1{stack.CHAT_PATH}", stack._create_bench_key(port)


def _script(work: Path, name: str, key: str) -> Path:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    return load.write_script(work / f"{name}.lua", stack.chat_body(stream=False), headers)


def _point(sides: Sequence[tuple[str, Path]], seconds: float) -> dict[str, Any]:
    """`wrk` against each (url, script) at once, the concurrency split between them:
    requests/s in all, the worst p50 and p99, errors."""
    each = CONCURRENCY // len(sides)
    with ThreadPoolExecutor(len(sides)) as pool:
        runs = list(
            pool.map(
                lambda side: load.run_wrk(side[0], side[1], connections=each, duration_s=seconds),
                sides,
            )
        )
    return {
        "rps": round(sum(r.rps for r in runs), 1),
        "requests": sum(r.requests for r in runs),
        "duration_s": round(max(r.duration_s for r in runs), 3),
        "errors": sum(r.errors for r in runs),
        "p50_ms": round(max(r.p50_ms for r in runs), 3),
        "p99_ms": round(max(r.p99_ms for r in runs), 3),
    }


def _rounds(
    named: dict[str, Sequence[tuple[str, Path]]], rounds: int, seconds: float
) -> dict[str, Any]:
    """Warm each side up, then alternate them `rounds` times; each side's requests over
    its time, its rounds kept."""
    for sides in named.values():
        _point(sides, 2)
    taken: dict[str, list[dict[str, Any]]] = {name: [] for name in named}
    for _ in range(rounds):
        for name, sides in named.items():
            taken[name].append(_point(sides, seconds))
    out: dict[str, Any] = {}
    for name, points in taken.items():
        requests = sum(p["requests"] for p in points)
        duration = sum(p["duration_s"] for p in points)
        out[name] = {
            "rps": round(requests / max(duration, 1e-9), 1),
            "errors": sum(p["errors"] for p in points),
            "p50_ms": sorted(p["p50_ms"] for p in points)[len(points) // 2],
            "rounds": [p["rps"] for p in points],
        }
    return out


def measure(work: Path, rounds: int, seconds: float) -> dict[str, Any]:
    bin_dir = binaries()
    if bin_dir is None:
        return {"skipped": "PostgreSQL's server binaries are absent (Debian `postgresql`)"}
    with ExitStack() as running:
        port = procs.free_port()
        upstream = running.enter_context(
            _server(
                "static-upstream",
                [sys.executable, "-m", "bench.static_upstream", "--port", str(port)],
                work,
            )
        )
        procs.wait_ready(
            upstream, f"http://127.0.0.1:{port}/health", deadline_s=stack.READY_DEADLINE_S
        )
        postgres = PostgresServer(bin_dir, durable=True)
        postgres.start()
        running.callback(postgres.stop)
        one_node = _one_node(running, work, port, postgres, rounds, seconds)
        two_nodes = _two_nodes(running, work, port, postgres, rounds, seconds)
    return {"one_node": one_node, "two_nodes": two_nodes}


def _one_node(
    running: ExitStack, work: Path, port: int, postgres: PostgresServer, rounds: int, seconds: float
) -> dict[str, Any]:
    sqlite = running.enter_context(_gateway("sqlite", work, port, {}))
    store = {"GATEWAY_DATABASE_URL": postgres.new_database(), "GATEWAY_SECRET_KEY": MASTER_KEY}
    pg = running.enter_context(_gateway("postgres", work, port, store))
    points = _rounds(
        {
            "sqlite": [(sqlite[0], _script(work, "sqlite", sqlite[1]))],
            "postgres": [(pg[0], _script(work, "postgres", pg[1]))],
        },
        rounds,
        seconds,
    )
    ratio = points["postgres"]["rps"] / max(points["sqlite"]["rps"], 1e-9)
    points["ratio_postgres_over_sqlite"] = round(ratio, 3)
    points["within_target"] = ratio >= 1 - TARGET_WITHIN
    return points


def _two_nodes(
    running: ExitStack, work: Path, port: int, postgres: PostgresServer, rounds: int, seconds: float
) -> dict[str, Any]:
    binary = shutil.which("redis-server")
    if binary is None:
        return {"skipped": "redis-server is not installed"}
    redis_port = procs.free_port()
    argv = [
        binary,
        "--port",
        str(redis_port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    redis = running.enter_context(_server("redis", argv, work))
    _wait_ping(redis, redis_port)
    shared = {
        "GATEWAY_DATABASE_URL": postgres.new_database(),
        "GATEWAY_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "GATEWAY_BLOB_DIR": str(work / "shared-blobs"),
        "GATEWAY_SECRET_KEY": MASTER_KEY,
    }
    nodes = [running.enter_context(_gateway(f"node-{n}", work, port, shared)) for n in "ab"]
    points = _rounds(
        {
            "one": [(nodes[0][0], _script(work, "one", nodes[0][1]))],
            "two": [(url, _script(work, f"two-{i}", key)) for i, (url, key) in enumerate(nodes)],
        },
        rounds,
        seconds,
    )
    points["ratio_two_over_one"] = round(points["two"]["rps"] / max(points["one"]["rps"], 1e-9), 3)
    return points


def summary(results: dict[str, Any]) -> str:
    one, two = results["one_node"], results["two_nodes"]
    lines = [
        f"# PostgreSQL store bench, {results['date']} (indicative: a shared 2-core machine,"
        f" load average {results['load_average_before']} before,"
        f" {results['load_average_after']} after)",
        "",
        "| what | req/s at c=32 | p50 ms | rounds (req/s) |",
        "|---|---|---|---|",
    ]
    for label, point in (
        ("one node, SQLite", one.get("sqlite")),
        ("one node, PostgreSQL", one.get("postgres")),
        ("one node, PostgreSQL + Redis", two.get("one")),
        ("two nodes, PostgreSQL + Redis", two.get("two")),
    ):
        if point:
            lines.append(f"| {label} | {point['rps']} | {point['p50_ms']} | {point['rounds']} |")
    lines += [
        "",
        f"PostgreSQL / SQLite: {one.get('ratio_postgres_over_sqlite')}"
        f" (target >= {1 - TARGET_WITHIN}: {'met' if one.get('within_target') else 'not met'});"
        f" two nodes / one: {two.get('ratio_two_over_one')}.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.postgres", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="two short rounds per side")
    args = parser.parse_args(argv)
    rounds, seconds = (2, 3.0) if args.quick else (4, 5.0)
    before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="bench-postgres-") as work:
        measured = measure(Path(work), rounds, seconds)
    results = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_before": before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "rounds": rounds,
        "round_s": seconds,
        **measured,
    }
    if "skipped" not in measured:
        stem = datetime.now(UTC).strftime("postgres-%Y-%m-%dT%H%M")
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
        print(summary(results))
    else:
        print(measured["skipped"])


if __name__ == "__main__":
    main()
