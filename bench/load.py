"""Non-streamed load with `wrk`: requests/s and the latency distribution.

`wrk` (C, one thread per core, epoll) costs far less per request than any Python
client, so the load generator is not what a run measures. A generated Lua script sets
the POST body and headers and, when the run is done, prints one JSON line with the
counts and a table of latency percentiles (`wrk` keeps a full histogram).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

# The percentiles kept from each run: enough points to draw the distribution.
PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.9, 100)
MARKER = "BENCH_JSON "

_LUA_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '%s{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,'
    .. '"status":%d,"timeout":%d,"mean_us":%.1f,"percentiles_us":{',
    "MARKER", summary.requests, summary.duration, e.connect, e.read, e.write,
    e.status, e.timeout, latency.mean))
  for i, p in ipairs({PERCENTILES}) do
    if i > 1 then io.write(",") end
    local v = p == 100 and latency.max or latency:percentile(p)
    io.write(string.format('"%s":%d', tostring(p), v))
  end
  io.write("}}\\n")
end
"""


@attrs.frozen
class WrkResult:
    """One `wrk` run. Latencies in milliseconds; `errors` counts failed requests
    (socket errors, timeouts and non-2xx/3xx answers)."""

    connections: int
    duration_s: float
    requests: int
    errors: int
    error_kinds: dict[str, int]
    mean_ms: float
    percentiles_ms: dict[str, float]

    @property
    def rps(self) -> float:
        """Successful requests per second."""
        return max(self.requests - self.error_kinds.get("status", 0), 0) / self.duration_s

    @property
    def p50_ms(self) -> float:
        return self.percentiles_ms["50"]

    @property
    def p99_ms(self) -> float:
        return self.percentiles_ms["99"]

    def to_json(self) -> dict[str, object]:
        return {
            "connections": self.connections,
            "duration_s": round(self.duration_s, 3),
            "requests": self.requests,
            "errors": self.errors,
            "error_kinds": self.error_kinds,
            "rps": round(self.rps, 1),
            "mean_ms": round(self.mean_ms, 3),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "percentiles_ms": {k: round(v, 3) for k, v in self.percentiles_ms.items()},
        }


def ensure_wrk() -> str:
    """The `wrk` binary; installs the Debian package when it is missing (saying so)."""
    found = shutil.which("wrk")
    if found:
        return found
    print("wrk not found: installing it with `apt-get install -y wrk`", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "wrk"], check=True)
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk is needed for the non-streamed load; install it and retry")
    return found


def write_script(path: Path, body: bytes, headers: Mapping[str, str]) -> Path:
    """A Lua script that POSTs `body` with `headers` and reports as JSON."""
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(body.decode())}"]
    lines += [f"wrk.headers[ {_lua_string(k)} ] = {_lua_string(v)}" for k, v in headers.items()]
    done = _LUA_DONE.replace("MARKER", MARKER).replace(
        "{PERCENTILES}", "{" + ", ".join(str(p) for p in PERCENTILES) + "}"
    )
    path.write_text("\n".join(lines) + "\n" + done)
    return path


def run_wrk(
    url: str,
    script: Path,
    *,
    connections: int,
    duration_s: float,
    cores: Sequence[int] | None = None,
    timeout_s: float = 10.0,
) -> WrkResult:
    """Run `wrk` once with one thread (it has one core) and parse its report."""
    argv = [
        ensure_wrk(),
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(duration_s))}s",
        f"--timeout={timeout_s:g}s",
        "-s",
        str(script),
        url,
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if cores is not None:
        os.sched_setaffinity(proc.pid, set(cores))
    output, _ = proc.communicate(timeout=duration_s + 60)
    return parse_report(output, connections)


def parse_report(output: str, connections: int) -> WrkResult:
    line = next((x for x in output.splitlines() if x.startswith(MARKER)), None)
    if line is None:
        raise RuntimeError(f"wrk gave no report:\n{output[-2000:]}")
    data = json.loads(line[len(MARKER) :])
    kinds = {k: data[k] for k in ("connect", "read", "write", "status", "timeout") if data[k]}
    return WrkResult(
        connections=connections,
        duration_s=data["duration_us"] / 1e6,
        requests=data["requests"],
        errors=sum(kinds.values()),
        error_kinds=kinds,
        mean_ms=data["mean_us"] / 1000,
        percentiles_ms={k: v / 1000 for k, v in data["percentiles_us"].items()},
    )


def _lua_string(text: str) -> str:
    """A Lua long-bracket literal that cannot be closed by the text inside it."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    eq = "=" * level
    return f"[{eq}[{text}]{eq}]"
