"""Section "instructions" (issue 37): instructions per relayed request, gateway against floor.

Wall-clock figures on a machine shared by several people are noise; the number of
instructions a process executes for a request is not. Each server runs under valgrind's
callgrind with instrumentation off while it starts (`--instr-atstart=no`: start-up at
a few times native speed, no counting), then:

1. `WARM_UP` requests on one kept-alive connection (pools, caches, imports done lazily);
2. instrumentation on, counters zeroed, `REQUESTS` requests one after another on that
   connection, counters dumped: the requests' instructions (`Ir`);
3. counters zeroed, `IDLE_S` seconds with no request, dumped: what the process does on
   its own per second (timers, workers), which a request under valgrind (~100x slower
   than native) overlaps with, so `rate x elapsed` is taken off the requests' count.

Only the server's own process is counted: the gateway's usage writer child (a process of
its own, off the request's path) is not traced. The gateway runs the bench's settings
without pause tracing and with its periodic sweeps a day apart (`QUIET_GATEWAY`). The
figure is the guide while the machine is busy; `--only instructions` runs it alone (a
few minutes).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench import procs
from bench.plan import Run
from bench.stack import Stack, Target, _start_gateway, chat_body

WARM_UP = 60
REQUESTS = 200
IDLE_S = 10.0
START_DEADLINE_S = 900.0  # a gateway's start-up under valgrind on a loaded machine
# The gateway's periodic work moved out of the window (a day apart): under valgrind on a
# busy machine 200 requests take minutes, so sweeps every 30-60 s (incidents, alerts,
# files, exports, health probes) fired a varying number of times in the requests' window
# and in the idle one, which made the idle rate taken off noisy by ~100 K per request.
DAY_S = "86400"
QUIET_GATEWAY = {
    "GATEWAY_TRACE_PAUSES": "false",  # its loop-lag watch wakes on a timer
    "GATEWAY_HEALTH_PROBE_INTERVAL_S": DAY_S,
    "GATEWAY_INCIDENT_CHECK_INTERVAL_S": DAY_S,
    "GATEWAY_ALERT_EVAL_INTERVAL_S": DAY_S,
    "GATEWAY_FILE_SWEEP_INTERVAL_S": DAY_S,
    "GATEWAY_EXPORT_SWEEP_INTERVAL_S": DAY_S,
}


def instructions(run: Run, stack: Stack) -> dict[str, Any]:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        return {"error": "valgrind is not installed (apt-get install valgrind)"}
    counted: dict[str, Any] = {"requests": REQUESTS, "warm_up": WARM_UP, "idle_s": IDLE_S}
    with ExitStack() as cleanup:
        floor = _floor_under_callgrind(run, cleanup, stack.targets["gateway"])
        counted["floor"] = _count(run, floor)
        floor.server.stop()
        gateway = _gateway_under_callgrind(run, cleanup, stack.sim_port)
        counted["gateway"] = _count(run, gateway)
    ours, theirs = counted["gateway"]["per_request"], counted["floor"]["per_request"]
    counted["ratio"] = round(ours / theirs, 3)
    counted["gateway_own_per_request"] = ours - theirs
    run.say(
        f"instructions per request: gateway {ours / 1e6:.2f} M, floor {theirs / 1e6:.2f} M"
        f" ({counted['ratio']:.2f}x)"
    )
    return counted


def _wrapper(run: Run, name: str) -> list[str]:
    out = run.work / f"callgrind-{name}.%p.out"
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]


def _floor_under_callgrind(run: Run, cleanup: ExitStack, like: Target) -> Target:
    port = procs.free_port()
    argv = [*_wrapper(run, "floor"), sys.executable, "-m", "bench.floor_app"]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    server = procs.start("floor-callgrind", argv, cores=run.pinning.gateway, log_dir=run.work)
    cleanup.callback(server.stop)
    procs.wait_ready(server, f"http://127.0.0.1:{port}/health", deadline_s=START_DEADLINE_S)
    return Target("floor", "Hypercorn alone", port, like.path, like.api_key, server)


def _gateway_under_callgrind(run: Run, cleanup: ExitStack, sim_port: int) -> Target:
    return _start_gateway(
        run.work,
        run.pinning,
        sim_port,
        cleanup,
        wrapper=_wrapper(run, "gateway"),
        env=QUIET_GATEWAY,
        name="gateway-callgrind",
        deadline_s=START_DEADLINE_S,
    )


def _count(run: Run, target: Target) -> dict[str, Any]:
    """The target's instructions per request, its idle rate taken off (see above)."""
    pid = target.server.pid  # the valgrind script execs the tool: the same process
    requests = Requests(target)
    requests.send(WARM_UP)
    _control(pid, "--instr=on")
    _control(pid, "--zero")
    started = time.monotonic()
    requests.send(REQUESTS)
    elapsed = time.monotonic() - started
    busy = _dumped(run, pid)
    _control(pid, "--zero")
    time.sleep(IDLE_S)
    idle_rate = _dumped(run, pid) / IDLE_S
    _control(pid, "--instr=off")
    requests.close()
    per_request = (busy - idle_rate * elapsed) / REQUESTS
    run.say(f"instructions: {target.name} {per_request / 1e6:.2f} M per request")
    return {
        "per_request": round(per_request),
        "raw_per_request": round(busy / REQUESTS),
        "idle_per_s": round(idle_rate),
        "elapsed_s": round(elapsed, 1),
    }


class Requests:
    """The bench's chat request, one after another on one kept-alive connection."""

    def __init__(self, target: Target) -> None:
        body = chat_body(stream=False)
        head = f"POST {target.path} HTTP/1.1\r\nHost: 127.0.0.1:{target.port}\r\n"
        for name, value in target.headers().items():
            head += f"{name}: {value}\r\n"
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self._request = head.encode() + body
        self._sock = socket.create_connection(("127.0.0.1", target.port), timeout=120)
        self._buffer = b""

    def send(self, count: int) -> None:
        for _ in range(count):
            self._sock.sendall(self._request)
            head = self._until(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"answer: {head[:200]!r}")
            self._take(_content_length(head))

    def _until(self, marker: bytes) -> bytes:
        while marker not in self._buffer:
            self._buffer += self._receive()
        head, _, self._buffer = self._buffer.partition(marker)
        return head

    def _take(self, size: int) -> None:
        while len(self._buffer) < size:
            self._buffer += self._receive()
        self._buffer = self._buffer[size:]

    def _receive(self) -> bytes:
        data = self._sock.recv(65536)
        if not data:
            raise RuntimeError("the server closed the connection")
        return data

    def close(self) -> None:
        self._sock.close()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise RuntimeError("an answer without Content-Length")


def _control(pid: int, *arguments: str) -> None:
    subprocess.run(["callgrind_control", *arguments, str(pid)], check=True, capture_output=True)


def _dumped(run: Run, pid: int) -> int:
    """Dump the counters and read their total (`summary:` of the newest dump file)."""
    before = set(run.work.glob(f"callgrind-*.{pid}.out*"))
    _control(pid, "--dump")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        new = set(run.work.glob(f"callgrind-*.{pid}.out*")) - before
        total = _summary(new)
        if total is not None:
            return total
        time.sleep(0.2)
    raise RuntimeError("callgrind wrote no dump")


def _summary(files: set[Path]) -> int | None:
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return None
