"""How many chat completions a second the simulator serves on one core.

The simulator is the upstream of every gateway benchmark, so its ceiling must sit far
above the gateway's: a gateway figure is only meaningful while the simulator is not
the bottleneck. This script starts `python -m providers.sim` in a subprocess pinned to
one core, drives it with `wrk` (pinned to the other cores) posting an OpenAI chat
completion over keep-alive connections, and prints the result as JSON and as a table.

    .venv/bin/python bench/sim_ceiling.py [--duration 10] [--connections 32] [--stream]

Needs `wrk` (Debian/Ubuntu: `apt-get install wrk`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PATH = "/openai/v1/chat/completions"
LUA = """
wrk.method = "POST"
wrk.body = [[%(body)s]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%%d,"duration_us":%%d,"bytes":%%d,' ..
    '"errors":{"connect":%%d,"read":%%d,"write":%%d,"status":%%d,"timeout":%%d},' ..
    '"latency_us":{"mean":%%.1f,"stdev":%%.1f,"max":%%d,"p50":%%d,"p90":%%d,"p99":%%d}}\\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
"""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds of load")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--core", type=int, default=0, help="the core the simulator runs on")
    parser.add_argument("--stream", action="store_true", help="streamed completions")
    parser.add_argument("--max-tokens", type=int, default=20, help="tokens per answer")
    return parser.parse_args(argv)


def chat_body(stream: bool, max_tokens: int) -> str:
    body: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Tell me something about rivers."}],
        "max_tokens": max_tokens,
    }
    if stream:
        body["stream"] = True
    return json.dumps(body)


@contextmanager
def simulator(core: int) -> Iterator[tuple[str, int]]:
    """A simulator subprocess pinned to `core`; yields its base address and pid."""
    process = subprocess.Popen(
        [sys.executable, "-m", "providers.sim", "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        os.sched_setaffinity(process.pid, {core})
        assert process.stdout is not None
        line = process.stdout.readline()  # "simulator listening on http://host:port"
        if "listening on " not in line:
            raise RuntimeError(f"simulator did not start: {line!r}")
        yield line.split("listening on ", 1)[1].strip(), process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


def check_once(base: str, body: str) -> None:
    """One request before the load: a broken simulator must not yield a fast figure."""
    request = urllib.request.Request(
        base + PATH,
        data=body.encode(),
        headers={"authorization": "Bearer sk-bench", "content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 200:
            raise RuntimeError(f"simulator answered {response.status}")
        response.read()


def run_wrk(wrk: str, base: str, body: str, args: argparse.Namespace) -> dict[str, Any]:
    other_cores = os.sched_getaffinity(0) - {args.core} or {args.core}
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(LUA % {"body": body})
    try:
        command = [
            wrk,
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{args.duration}s",
            "-s",
            script.name,
            base + PATH,
        ]
        output = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=lambda: os.sched_setaffinity(0, other_cores),
        ).stdout
    finally:
        os.unlink(script.name)
    line = next(line for line in output.splitlines() if line.startswith("WRK_JSON "))
    result: dict[str, Any] = json.loads(line.removeprefix("WRK_JSON "))
    return result


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc.

    Requests per CPU-second is the ceiling even on a busy machine, where other
    processes take the simulator's core for part of the wall-clock time.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sim_stats(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(base + "/_sim/stats", timeout=10) as response:
        stats: dict[str, Any] = json.load(response)
        return stats


def summarize(
    raw: dict[str, Any], stats: dict[str, Any], cpu: float, args: argparse.Namespace
) -> dict[str, Any]:
    seconds = raw["duration_us"] / 1e6
    latency = raw["latency_us"]
    return {
        "benchmark": "sim_ceiling",
        "mode": "stream" if args.stream else "json",
        "connections": args.connections,
        "duration_s": round(seconds, 2),
        "requests": raw["requests"],
        "requests_per_second": round(raw["requests"] / seconds, 1),
        "latency_ms": {key: round(value / 1000, 3) for key, value in latency.items()},
        "errors": raw["errors"],
        "server_requests_total": stats["requests_total"],
        "server_cpu_seconds": round(cpu, 2),
        "requests_per_cpu_second": round(raw["requests"] / cpu, 1) if cpu else None,
        "server_cpu_cores": 1,
        "cpus_available": os.cpu_count(),
    }


def print_table(summary: dict[str, Any]) -> None:
    latency = summary["latency_ms"]
    rows = [
        ("mode", summary["mode"]),
        ("connections", summary["connections"]),
        ("requests", summary["requests"]),
        ("requests/s", summary["requests_per_second"]),
        ("requests/cpu-s", summary["requests_per_cpu_second"]),
        ("server cpu %", round(100 * summary["server_cpu_seconds"] / summary["duration_s"])),
        ("latency mean ms", latency["mean"]),
        ("latency p50 ms", latency["p50"]),
        ("latency p90 ms", latency["p90"]),
        ("latency p99 ms", latency["p99"]),
        ("latency max ms", latency["max"]),
        ("errors", sum(summary["errors"].values())),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    wrk = shutil.which("wrk")
    if wrk is None:
        print("wrk is not installed: `apt-get install -y wrk` (needed for this benchmark)")
        return 2
    body = chat_body(args.stream, args.max_tokens)
    with simulator(args.core) as (base, pid):
        check_once(base, body)
        cpu_before = cpu_seconds(pid)
        raw = run_wrk(wrk, base, body, args)
        cpu = cpu_seconds(pid) - cpu_before
        stats = sim_stats(base)
    summary = summarize(raw, stats, cpu, args)
    print(json.dumps(summary, indent=2))
    print_table(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
