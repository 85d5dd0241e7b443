"""What happens to a connection around its requests: an early answer to a body nobody
reads closes it, and a shutdown answers every request in flight, refuses new connections
and ends promptly."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from gateway.platform.connections import GuardedConnection
from tests.gateway.conftest import ADMIN_KEY

DECLARED = 5_000_000  # what the upload says it will send (under the 8 MiB body limit)
SENT = 64 * 1024  # what it sends before waiting for the answer


async def early_answer(url: str, head: str) -> tuple[bytes, bytes]:
    """Send `head` declaring a large body, then a little of it; the answer, and what the
    server sends after it (b"" once it closes the connection)."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    stream = await trio.open_tcp_stream(parts.hostname, parts.port)
    async with stream:
        await stream.send_all(head.encode() + b"\r\n" + b"x" * SENT)
        answer = b""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive_some()
            rest = b""
            while chunk := await stream.receive_some():  # ends only when the server closes
                rest += chunk
        return answer + rest, rest


@pytest.mark.parametrize(
    ("path", "auth", "declared", "status"),
    [
        ("/v1/no-such-route", True, DECLARED, b"404"),  # Quart's routes
        ("/v1/embeddings", False, DECLARED, b"401"),
        ("/v1/chat/completions", False, DECLARED, b"401"),  # the fast path
        ("/v1/chat/completions", True, 2 * DECLARED, b"413"),
    ],
)
async def test_an_answer_before_the_body_was_read_closes_the_connection(
    gateway: RunningGateway, path: str, auth: bool, declared: int, status: bytes
) -> None:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: gw\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {declared}\r\n"
        + (f"Authorization: Bearer {ADMIN_KEY}\r\n" if auth else "")
    )
    answer, _ = await early_answer(gateway.url, head)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status in status_line
    assert b"connection: close" in rest.lower()
    # and a request that was read whole keeps its connection alive
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        first = await client.get("/health")
        second = await client.get("/health")
    assert first.headers.get("connection") != "close"
    assert second.status_code == 200


def _connections() -> list[GuardedConnection]:
    """Every client connection object the collector tracks (a dead one in a cycle too)."""
    return [o for o in gc.get_objects() if isinstance(o, GuardedConnection)]


async def test_a_closed_connection_is_freed_at_once_not_by_the_collector(
    gateway: RunningGateway,
) -> None:
    """A connection's protocol and task group hold bound methods of it: unless the cycle
    is broken as it ends, each closed connection (its h11 state, buffers and socket)
    waited for a full collection, which the gateway's settled heap makes rare, so a busy
    gateway held hundreds of dead connections (issue 37)."""
    gc.collect()
    gc.disable()  # nothing is collected: only refcounting can free the connection
    try:
        async with openai.AsyncOpenAI(
            base_url=gateway.url + "/v1", api_key=ADMIN_KEY, max_retries=0
        ) as client:
            answer = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
            assert answer.choices[0].message.content
            assert len(_connections()) == 1
        # the client has hung up; the server ends the connection when it reads the EOF
        with trio.fail_after(10):
            while _connections():  # noqa: ASYNC110 - no event tells a connection's end
                await trio.sleep(0.01)
    finally:
        gc.enable()


async def upstream_reached(running: RunningGateway) -> None:
    """Wait until the request in flight has reached the simulated upstream."""
    assert running.sim is not None
    with trio.fail_after(10):
        while running.sim.stats.requests_total == 0:  # noqa: ASYNC110 - a counter, no event
            await trio.sleep(0.01)


async def _serving(
    nursery: trio.Nursery, settings: Settings, stop: trio.Event, done: trio.Event
) -> RunningGateway:
    async def run(task_status: trio.TaskStatus[RunningGateway]) -> None:
        await run_gateway(settings, env={}, shutdown_trigger=stop.wait, task_status=task_status)
        done.set()

    running: RunningGateway = await nursery.start(run)
    return running


async def test_a_plain_request_still_running_at_the_end_of_the_grace_gets_a_503(
    settings: Settings,
) -> None:
    settings = attrs.evolve(settings, sim_ttft_ms=8000, shutdown_grace_s=1.0)
    stop, done = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        running = await _serving(nursery, settings, stop, done)
        async with httpx.AsyncClient(
            base_url=running.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=20
        ) as client:
            answers: list[httpx.Response] = []

            async def ask() -> None:
                body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
                answers.append(await client.post("/v1/chat/completions", json=body))

            nursery.start_soon(ask)
            await upstream_reached(running)  # the request waits for the first token
            stop.set()
            started = trio.current_time()
            with trio.fail_after(settings.shutdown_grace_s + 3):
                await done.wait()
            stopped_after = trio.current_time() - started
            with pytest.raises(httpx.ConnectError):  # new connections are refused
                await httpx.AsyncClient(base_url=running.url).get("/health")
    (answer,) = answers
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "service_unavailable"
    assert answer.headers["retry-after"] == "1"
    assert stopped_after >= settings.shutdown_grace_s  # it was given its grace


async def test_a_stream_still_running_at_the_end_of_the_grace_ends_with_an_error_event(
    settings: Settings,
) -> None:
    settings = attrs.evolve(settings, sim_tokens_per_second=5.0, shutdown_grace_s=1.0)
    stop, done = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        running = await _serving(nursery, settings, stop, done)
        async with openai.AsyncOpenAI(
            base_url=running.url + "/v1", api_key=ADMIN_KEY, max_retries=0
        ) as client:
            stream = await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "tell me a long story"}],
                max_tokens=200,
                stream=True,
            )
            text = ""
            with pytest.raises(openai.APIError, match="shutting down"):
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        text += chunk.choices[0].delta.content
                        stop.set()
        with trio.fail_after(settings.shutdown_grace_s + 3):
            await done.wait()
    assert text  # it was streaming when the shutdown began


async def test_requests_that_finish_within_the_grace_are_answered_and_exit_is_prompt(
    settings: Settings,
) -> None:
    settings = attrs.evolve(settings, sim_ttft_ms=300, shutdown_grace_s=5.0)
    stop, done = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        running = await _serving(nursery, settings, stop, done)
        async with openai.AsyncOpenAI(
            base_url=running.url + "/v1", api_key=ADMIN_KEY, max_retries=0
        ) as client:
            answers: list[str | None] = []

            async def ask() -> None:
                reply = await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
                )
                answers.append(reply.choices[0].message.content)

            nursery.start_soon(ask)
            await upstream_reached(running)
            stop.set()
            with trio.fail_after(3):  # well before the 5 s grace: nothing else holds it
                await done.wait()
    assert len(answers) == 1 and answers[0]


async def test_sigterm_answers_the_request_in_flight_and_the_process_exits_promptly(
    tmp_path: Path,
) -> None:
    """The real process and the real signal: `gateway serve`, a request waiting on a slow
    upstream, SIGTERM. The request gets its clean 503 and the process is gone soon after
    the grace period."""
    env = {
        **os.environ,
        "GATEWAY_ADMIN_KEY": ADMIN_KEY,
        "GATEWAY_SIM_TTFT_MS": "8000",
        "GATEWAY_SHUTDOWN_GRACE_S": "1",
    }
    argv = [sys.executable, "-m", "gateway", "serve", "--demo", "--port", "0"]
    argv += ["--data-dir", str(tmp_path / "data")]
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            partial(trio.run_process, argv, env=env, stdout=subprocess.PIPE, check=False)
        )
        assert process.stdout is not None
        url = await _listening_url(process.stdout)
        answers: list[httpx.Response] = []

        async def ask() -> None:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
                headers = {"authorization": f"Bearer {ADMIN_KEY}"}
                answers.append(
                    await client.post("/v1/chat/completions", json=body, headers=headers)
                )

        nursery.start_soon(ask)
        await trio.sleep(1)  # the request waits for the upstream's first token
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(5):  # a 1 s grace, then a prompt exit
            await process.wait()
    assert process.returncode == 0
    (answer,) = answers
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "service_unavailable"


async def _listening_url(stdout: trio.abc.ReceiveStream) -> str:
    seen = b""
    with trio.fail_after(30):
        while b"gateway listening on " not in seen or not seen.endswith(b"\n"):
            seen += await stdout.receive_some()
    line = seen.split(b"gateway listening on ", 1)[1].split(b"\n", 1)[0]
    return line.decode().strip()
