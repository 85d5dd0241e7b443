"""Instructions per request through each front door: section 8's load-independent guide.

`python -m bench.fronts_instructions` starts the simulator and one gateway under
callgrind, as section `instructions` does (`bench.instructions`: instrumentation off while
it starts, its periodic sweeps a day apart), and counts for each door, non-streamed then
streamed, `REQUESTS` requests one after another on one kept-alive connection after
`WARM_UP`, the process's idle rate taken off. Each door's count over chat's is the share
the issue's 10 % is about, without the shared machine's load in it (the wall-clock
figures of section 8 move by tens of per cent on a busy host).

`responses (store: false)` is the Responses door without its stored response, which
separates the store from the translation. Under valgrind a request takes ~100x its
native time, so the stored responses' writer (a group every 50 ms) writes a group per
request here: the store is counted at its worst, a group of one, where the bench's loads
share each group between tens of responses.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench import machine
from bench.fronts import DOORS, responses_body
from bench.instructions import (
    Requests,
    _content_length,
    _control,
    _dumped,
    _gateway_under_callgrind,
)
from bench.plan import Plan, Run
from bench.stack import Target, _start_sim

WARM_UP = 30
REQUESTS = 100
IDLE_S = 5.0
NOT_STORED = "responses (store: false)"


def not_stored_body(stream: bool) -> bytes:
    return json.dumps({**json.loads(responses_body(stream)), "store": False}).encode()


BODIES: dict[str, tuple[str, Callable[[bool], bytes]]] = {
    **DOORS,
    NOT_STORED: (DOORS["responses"][0], not_stored_body),
}


class DoorRequests(Requests):
    """`Requests` through any door with any body; a streamed answer (chunked) is read
    whole too."""

    def __init__(self, target: Target, path: str, body: bytes) -> None:
        super().__init__(target)
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{target.port}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in target.headers().items())
        self._request = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    def send(self, count: int) -> None:
        for _ in range(count):
            self._sock.sendall(self._request)
            self._read_answer()

    def _read_answer(self) -> None:
        head = self._until(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"answer: {head[:200]!r}")
        if b"transfer-encoding: chunked" not in head.lower():
            self._take(_content_length(head))
            return
        while True:  # chunks until the empty one
            size = int(self._until(b"\r\n").split(b";")[0], 16)
            self._take(size + 2)
            if size == 0:
                return


def count(run: Run, gateway: Target, name: str, stream: bool, idle_per_s: float) -> float:
    """`name`'s instructions per request (streamed or not), the idle rate taken off."""
    path, body = BODIES[name]
    requests = DoorRequests(gateway, path, body(stream))
    try:
        requests.send(WARM_UP)
        _control(gateway.server.pid, "--zero")
        started = time.monotonic()
        requests.send(REQUESTS)
        elapsed = time.monotonic() - started
        busy = _dumped(run, gateway.server.pid)
    finally:
        requests.close()
    return (busy - idle_per_s * elapsed) / REQUESTS


def measure(run: Run) -> dict[str, Any]:
    counted: dict[str, Any] = {"requests": REQUESTS, "warm_up": WARM_UP}
    with ExitStack() as cleanup:
        sim = _start_sim(run.work, run.pinning, cleanup)
        gateway = _gateway_under_callgrind(run, cleanup, sim.port)
        pid = gateway.server.pid
        _control(pid, "--instr=on")
        _control(pid, "--zero")
        time.sleep(IDLE_S)
        counted["idle_per_s"] = idle = _dumped(run, pid) / IDLE_S
        for kind, stream in (("non_streamed", False), ("streamed", True)):
            figures = {name: count(run, gateway, name, stream, idle) for name in BODIES}
            counted[kind] = {name: round(value) for name, value in figures.items()}
            for name, value in figures.items():
                over = (value - figures["chat"]) * 100 / figures["chat"]
                run.say(
                    f"fronts instructions {kind:<12} {name:<24} {value / 1e6:6.3f} M"
                    f" per request ({over:+.1f} % over chat's)"
                )
    return counted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fronts_instructions")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    work: Path = args.work or Path(tempfile.mkdtemp(prefix="fronts-instructions-"))
    work.mkdir(parents=True, exist_ok=True)
    run = Run(Plan.quick_look(), work, machine.describe(), machine.plan_pinning())
    print(json.dumps(measure(run), indent=2), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
