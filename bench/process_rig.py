"""One real gateway process for the durability and fault benchmarks (and their bounded
versions in the tests): `gateway serve --demo` on a data directory of its own, its
simulators in the same process, started, waited for, killed or stopped.

A test must see what a user's process does: SIGKILL, SIGTERM, restart on the same data
directory. So the gateway runs as a child process, never in the test's own loop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import httpx

from bench import procs

ADMIN_KEY = "gw_admin_durability_0123456789abcdefghij"
READY_DEADLINE_S = 120.0  # a start on a busy shared machine can take a minute
REPO = Path(__file__).resolve().parent.parent


@attrs.define
class GatewayProcess:
    """A gateway child process on `port`, with its data in `data_dir`."""

    data_dir: Path
    port: int
    log_dir: Path
    env: dict[str, str]
    proc: procs.Proc | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        """Start (or restart, on the same data) and wait until `/health` answers."""
        self.starts += 1
        argv = [sys.executable, "-m", "gateway", "serve", "--demo", "--host", "127.0.0.1"]
        argv += ["--port", str(self.port), "--data-dir", str(self.data_dir)]
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"GATEWAY_ADMIN_KEY": ADMIN_KEY, "PYTHONPATH": str(REPO)} | self.env
        cores = tuple(sorted(os.sched_getaffinity(0)))
        name = f"gateway-{self.starts}"
        self.proc = procs.start(name, argv, cores=cores, log_dir=self.log_dir, env=env, cwd=REPO)
        procs.wait_ready(self.proc, self.url + "/health", deadline_s=READY_DEADLINE_S)

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind runs in the gateway."""
        assert self.proc is not None
        self.proc.popen.send_signal(signal.SIGKILL)
        self.proc.popen.wait()

    def terminate(self) -> None:
        """SIGTERM: the start of a graceful shutdown (`wait` for its end)."""
        assert self.proc is not None
        self.proc.popen.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float) -> int:
        """The exit code, once the process has ended (raises on `timeout_s`)."""
        assert self.proc is not None
        return self.proc.popen.wait(timeout_s)

    def stop(self) -> None:
        """Make sure the process is gone (a graceful stop, then SIGKILL)."""
        if self.proc is not None:
            self.proc.stop(grace_s=15.0)

    def log_tail(self, lines: int = 40) -> str:
        return self.proc.log_tail(lines) if self.proc is not None else ""


def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_KEY}"}


def sim_control(gateway: GatewayProcess, method: str, path: str, payload: object = None) -> object:
    """Call the in-process simulators' `/_sim` control API (its port is the gateway's
    provider base URL, read from the management API)."""
    with httpx.Client(timeout=10, trust_env=False, headers=admin_headers()) as client:
        detail = client.get(gateway.url + "/v1/management/providers/openai").json()
        base = str(detail["settings"]["base_url"])
        root = base.split("/openai")[0]
        answer = client.request(method, root + "/_sim" + path, json=payload)
    answer.raise_for_status()
    return answer.json()


def wait_for_exit(proc: subprocess.Popen[bytes], deadline_s: float) -> int | None:
    """The exit code, or None if still running after `deadline_s`."""
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        code = proc.poll()
        if code is not None:
            return code
        time.sleep(0.05)
    return None
