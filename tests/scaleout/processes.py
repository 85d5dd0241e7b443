"""Real gateway processes for the scale-out tests: `gateway serve` as a user runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import attrs
import httpx
import trio

from tests.gateway.conftest import ADMIN_KEY
from tests.scaleout.redis_server import free_port

READY_DEADLINE_S = 120.0  # a loaded 2-core machine starts N Python processes slowly
STOP_DEADLINE_S = 30.0


@attrs.define
class GatewayProcess:
    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """A graceful stop (SIGTERM), as an operator's process manager sends it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_gateway(
    data_dir: Path, redis_url: str | None, *args: str, extra_env: dict[str, str] | None = None
) -> GatewayProcess:
    port = free_port()
    env = dict(os.environ, GATEWAY_ADMIN_KEY=ADMIN_KEY, GATEWAY_SIM_TTFT_MS="0")
    env["GATEWAY_SIM_TOKENS_PER_SECOND"] = "0"
    env["GATEWAY_LOG_FORMAT"] = "json"
    # Exactness, not speed, is tested: a loaded machine must not turn a slow answer from
    # Redis into the unavailable policy.
    env["GATEWAY_REDIS_TIMEOUT_S"] = "10"
    if redis_url is not None:
        env["GATEWAY_REDIS_URL"] = redis_url
    env.update(extra_env or {})
    command = [sys.executable, "-m", "gateway", "serve", "--demo", "--port", str(port)]
    command += ["--data-dir", str(data_dir), *args]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return GatewayProcess(f"http://127.0.0.1:{port}", process)


async def wait_ready(gateway: GatewayProcess, answers: int = 1) -> None:
    """Until the gateway has answered `answers` authenticated requests (a supervisor's
    workers start at their own pace; until then connections wait in the backlog)."""
    async with httpx.AsyncClient(
        headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=10
    ) as http:
        with trio.fail_after(READY_DEADLINE_S):
            done = 0
            while done < answers:
                assert gateway.process.poll() is None, "the gateway exited"
                try:
                    response = await http.get(gateway.url + "/v1/models")
                except httpx.TransportError:
                    await trio.sleep(0.2)
                    continue
                if response.status_code == 200:
                    done += 1
