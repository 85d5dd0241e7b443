"""The usage writer's own process inside a real `gateway serve` (issue 23): what it
commits is what the analytics API reads after its flush; a writer killed with SIGKILL is
replaced, logged, and loses nothing it did not hold; a gateway killed with SIGKILL leaves
no writer behind, and the batch the writer had received is committed.

One gateway process for the whole story (its start is most of the test's time)."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import httpx
import trio

from bench import procs
from bench.process_rig import GatewayProcess, admin_headers

CHAT = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Count me."}],
    "service": {"cache": "skip"},
    "max_tokens": 5,
}


def _writer_pid(gateway_pid: int) -> int | None:
    for child in procs.children(gateway_pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"gateway.workers.usage_child" in cmdline:
            return child
    return None


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _until(check: object, deadline_s: float = 20.0) -> None:
    """Poll a condition (in a thread: it reads /proc) until it holds."""
    assert callable(check)
    end = time.monotonic() + deadline_s
    while not check():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.02)


async def _chats(client: httpx.AsyncClient, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        answer = await client.post("/v1/chat/completions", json=CHAT)
        assert answer.status_code == 200, answer.text
        ids.append(answer.json()["service"]["request_id"])
    return ids


async def _requests_counted(client: httpx.AsyncClient) -> int:
    answer = await client.get("/v1/management/analytics/usage")
    assert answer.status_code == 200, answer.text
    return int(answer.json()["totals"]["requests"])


async def test_the_writer_process_in_a_real_gateway(tmp_path: Path) -> None:
    gateway = GatewayProcess(tmp_path / "data", procs.free_port(), tmp_path, {})
    await trio.to_thread.run_sync(gateway.start)
    try:
        first = await trio.to_thread.run_sync(_writer_pid, gateway.pid)
        assert first is not None, "no usage writer process under the gateway"
        async with httpx.AsyncClient(
            base_url=gateway.url, headers=admin_headers(), timeout=30
        ) as client:
            await _chats(client, 4)
            assert await _requests_counted(client) == 4  # flushed through the child

            os.kill(first, signal.SIGKILL)  # idle: nothing in flight is lost
            await trio.to_thread.run_sync(_until, lambda: _state(first) in (None, "Z"))
            await _chats(client, 3)
            assert await _requests_counted(client) == 7
            second = await trio.to_thread.run_sync(_writer_pid, gateway.pid)
            assert second not in (None, first)
            metrics = (await client.get("/metrics")).text
            assert 'gateway_usage_log_records_total{fate="failed"} 0.0' in metrics

            os.kill(second, signal.SIGSTOP)  # it will hold the next batch unanswered
            (held,) = await _chats(client, 1)
            await trio.sleep(0.3)  # past the writer's 50 ms grouping: the batch is sent
        gateway.kill()
        os.kill(second, signal.SIGCONT)
        # The gateway is gone; its writer commits the batch it received and exits.
        await trio.to_thread.run_sync(_until, lambda: _state(second) in (None, "Z"))
    finally:
        await trio.to_thread.run_sync(gateway.stop)
    assert "exited with status -9 while idle" in gateway.log_tail(400)
    with sqlite3.connect(gateway.data_dir / "gateway.db") as db:
        stored = {row[0] for row in db.execute("SELECT request_id FROM usage_records")}
    db.close()
    assert held in stored
    assert len(stored) == 8
