"""The issue's proofs with real processes: `gateway serve --workers 2`, and two gateway
processes on two ports, sharing one Redis; exact limits across them, revocation on every
worker within a second, and the refusal to run several workers without Redis."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio

from tests.gateway.conftest import ADMIN_KEY
from tests.scaleout.helpers import CHAT_BODY, KEYS, create_key, fire
from tests.scaleout.processes import GatewayProcess, start_gateway, wait_ready
from tests.scaleout.redis_server import RedisServer


@pytest.fixture
def two_workers(tmp_path: Path, redis_server: RedisServer) -> Iterator[GatewayProcess]:
    gateway = start_gateway(tmp_path / "data", redis_server.url, "--workers", "2")
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture
def two_processes(tmp_path: Path, redis_server: RedisServer) -> Iterator[list[GatewayProcess]]:
    """Two gateways on two ports: one machine's store, one Redis. The second starts once
    the first has made the data folder (its master key, its schema): two processes
    creating one folder at the same instant is what `--workers` is for."""
    gateways = [start_gateway(tmp_path / "data", redis_server.url)]
    try:
        trio.run(wait_ready, gateways[0])
        gateways.append(start_gateway(tmp_path / "data", redis_server.url))
        yield gateways
    finally:
        for gateway in gateways:
            gateway.stop()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


async def test_two_workers_admit_exactly_the_rpm_limit(two_workers: GatewayProcess) -> None:
    await wait_ready(two_workers, answers=4)
    # Own process group (a terminal's Ctrl-C reaches the supervisor alone), the
    # supervisor's session (one scheduler autogroup: no wait for the CPU at each wake-up).
    supervisor = two_workers.process.pid
    workers = _children(supervisor)
    assert len(workers) == 2
    for pid in workers:
        assert os.getpgid(pid) == pid
        assert os.getsid(pid) == os.getsid(supervisor)
    _, secret = await create_key(two_workers.url, {"rpm": 100})
    outcomes = await fire([two_workers.url], secret, 300)
    assert outcomes == {(200, ""): 100, (429, "rate_limit_exceeded"): 200}


async def test_two_workers_admit_exactly_the_daily_limit(two_workers: GatewayProcess) -> None:
    await wait_ready(two_workers, answers=4)
    _, secret = await create_key(two_workers.url, {"daily_requests": 100})
    outcomes = await fire([two_workers.url], secret, 300)
    assert outcomes == {(200, ""): 100, (429, "daily_limit_exceeded"): 200}


async def test_two_processes_admit_exactly_the_rpm_limit(
    two_processes: list[GatewayProcess],
) -> None:
    await wait_ready(two_processes[1])
    _, secret = await create_key(two_processes[0].url, {"rpm": 100})
    outcomes = await fire([g.url for g in two_processes], secret, 300)
    assert outcomes == {(200, ""): 100, (429, "rate_limit_exceeded"): 200}


async def test_a_revocation_stops_every_process_within_a_second(
    two_processes: list[GatewayProcess],
) -> None:
    await wait_ready(two_processes[1])
    key_id, secret = await create_key(two_processes[0].url, {})
    auth = {"authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(timeout=30) as http:
        for gateway in two_processes:
            ok = await http.post(gateway.url + "/v1/chat/completions", json=CHAT_BODY, headers=auth)
            assert ok.status_code == 200, ok.text
        revoked = await http.post(
            f"{two_processes[0].url}{KEYS}/{key_id}/revoke",
            headers={"authorization": f"Bearer {ADMIN_KEY}"},
        )
        assert revoked.status_code == 200, revoked.text
        with trio.fail_after(1.0):
            for gateway in two_processes:
                while True:
                    answer = await http.post(
                        gateway.url + "/v1/chat/completions", json=CHAT_BODY, headers=auth
                    )
                    if answer.status_code == 401:
                        break


def test_several_workers_without_redis_refuse_to_start(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "gateway", "serve", "--workers", "2"]
    command += ["--data-dir", str(tmp_path / "data"), "--port", "0"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2])}
    result = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    assert result.returncode == 2
    assert b"GATEWAY_REDIS_URL" in result.stderr
    assert not (tmp_path / "data").exists()  # refused before touching anything
