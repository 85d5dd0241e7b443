"""A few hundred slow clients cannot take the gateway away from everyone else (issue 31,
"Limits on what a slow client can hold").

A real `gateway serve` process with short limits. From one address (127.0.0.2), 300
slow clients: heads sent a byte at a time, uploads that stall after a few bytes, new
connections that send nothing, keep-alive connections left idle. Beside them, from
127.0.0.1, normal traffic (chat requests and `/health`) keeps being answered. Every slow
client is cut at its limit: 408 `request_timeout` for the head and for the upload under
the minimum rate, a close for the idle ones, and 503 `too_many_connections` past the
per-address cap. On the code before, the stalled uploads held their connections for the
whole upload timeout (600 s), heads and idle connections for 75 s, and nothing capped the
connections of one address.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path

import httpx
import openai
import trio

from tests.gateway.conftest import ADMIN_KEY
from tests.hardening.wire import connect, gateway_process, parse_answer
from tests.scaleout.processes import wait_ready

SLOW_ADDRESS = "127.0.0.2"
EACH_KIND = 75  # four kinds: 300 slow clients
PER_ADDRESS_CAP = 250
LIMITS = {
    "GATEWAY_HEADER_TIMEOUT_S": "4",
    "GATEWAY_UPLOAD_RATE_GRACE_S": "4",
    "GATEWAY_MIN_UPLOAD_RATE_BYTES_S": "1000",
    "GATEWAY_KEEP_ALIVE_TIMEOUT_S": "4",
    "GATEWAY_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS_CAP),
}
# How long a slow client waits for its cut; the limits above are 4 s.
CUT_DEADLINE_S = 30.0
GONE = (trio.BrokenResourceError, trio.ClosedResourceError)

SlowClient = Callable[[trio.SocketStream], Awaitable[None]]


async def trickled_head(stream: trio.SocketStream) -> None:
    """A request head, a byte every half second: never finished."""
    for byte in b"GET /health HTTP/1.1\r\nHost: gw\r\nX-Slow: " + b"z" * 1000:
        await stream.send_all(bytes([byte]))
        await trio.sleep(0.5)


async def stalled_upload(stream: trio.SocketStream) -> None:
    """A file upload whose body stops after its first bytes."""
    head = (
        f"POST /v1/files HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {ADMIN_KEY}\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000000\r\n\r\n"
    )
    await stream.send_all(head.encode() + b"--b\r\n")
    await trio.sleep_forever()


async def silent(stream: trio.SocketStream) -> None:
    """A connection that never sends a byte."""
    await trio.sleep_forever()


async def idle_after_a_request(stream: trio.SocketStream) -> None:
    """A keep-alive connection left idle after one request (its answer is read by the
    caller with the rest)."""
    await stream.send_all(b"GET /health HTTP/1.1\r\nHost: gw\r\n\r\n")
    await trio.sleep_forever()


KINDS: dict[str, SlowClient] = {
    "trickled_head": trickled_head,
    "stalled_upload": stalled_upload,
    "silent": silent,
    "idle_after_a_request": idle_after_a_request,
}


def outcome(kind: str, received: bytes) -> str:
    """What the gateway did to one slow client, by what it sent before closing."""
    if received.startswith(b"HTTP/1.1 503"):
        assert parse_answer(received).error()["code"] == "too_many_connections"
        return "refused"
    if kind == "idle_after_a_request":
        assert parse_answer(received).status == 200
        return "closed"
    if kind == "silent":
        assert received == b""
        return "closed"
    answer = parse_answer(received)
    assert answer.status == 408, received[:300]
    assert answer.error()["code"] == "request_timeout"
    return "408"


async def slow_client(
    url: str, kind: str, outcomes: Counter[tuple[str, str]], connected: trio.Semaphore
) -> None:
    async with await connect(url, local_address=SLOW_ADDRESS) as stream:
        connected.release()
        received = b""
        async with trio.open_nursery() as nursery:

            async def misbehave() -> None:
                with suppress(*GONE):
                    await KINDS[kind](stream)

            nursery.start_soon(misbehave)
            with trio.fail_after(CUT_DEADLINE_S):
                with suppress(trio.BrokenResourceError):
                    while chunk := await stream.receive_some():
                        received += chunk
            nursery.cancel_scope.cancel()
    outcomes[kind, outcome(kind, received)] += 1


async def normal_traffic(url: str, answered: list[int], stop: trio.Event) -> None:
    async with (
        openai.AsyncOpenAI(
            base_url=url + "/v1", api_key=ADMIN_KEY, max_retries=0, timeout=10
        ) as client,
        httpx.AsyncClient(timeout=10) as http,
    ):
        while not stop.is_set():
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
            )
            assert reply.choices[0].message.content
            assert (await http.get(url + "/health")).status_code == 200
            answered.append(1)
            # A client's pace, under the key's 600 requests a minute: unpaced, a fast
            # host reached the limit before the slow clients were all cut (a 429).
            await trio.sleep(0.2)


async def test_slow_clients_are_cut_at_their_limits_while_others_are_served(
    tmp_path: Path,
) -> None:
    outcomes: Counter[tuple[str, str]] = Counter()
    answered: list[int] = []
    with gateway_process(tmp_path, **LIMITS) as gateway:
        await wait_ready(gateway)
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(normal_traffic, gateway.url, answered, stop)
            connected = trio.Semaphore(0, max_value=4 * EACH_KIND)
            async with trio.open_nursery() as slow:
                for _ in range(EACH_KIND):
                    for kind in KINDS:
                        slow.start_soon(slow_client, gateway.url, kind, outcomes, connected)
                for _ in range(4 * EACH_KIND):  # every slow client is connected
                    await connected.acquire()
                answered_before = len(answered)
            answered_meanwhile = len(answered) - answered_before  # while they were cut
            stop.set()
        assert gateway.process.poll() is None
    refused = sum(count for (_, result), count in outcomes.items() if result == "refused")
    assert refused == 4 * EACH_KIND - PER_ADDRESS_CAP  # all connected before any was cut
    assert sum(outcomes.values()) == 4 * EACH_KIND
    for kind, expected in (
        ("trickled_head", "408"),
        ("stalled_upload", "408"),
        ("silent", "closed"),
        ("idle_after_a_request", "closed"),
    ):
        assert outcomes[kind, expected] + outcomes[kind, "refused"] == EACH_KIND
        assert outcomes[kind, expected] > 0
    assert answered_meanwhile > 0
