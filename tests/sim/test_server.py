"""The simulator's server over raw sockets: keep-alive, framing, dispatch, control API."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio

from providers.sim import server as server_module
from providers.sim.core import Route, SimContext, SimRequest, SimResponse
from providers.sim.server import SimServer

DEADLINE = 10
CHAT = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})


def chat_request(extra: str = "") -> bytes:
    return (
        "POST /openai/v1/chat/completions HTTP/1.1\r\nhost: sim\r\n"
        f"authorization: Bearer k\r\ncontent-length: {len(CHAT)}\r\n{extra}\r\n{CHAT}"
    ).encode()


async def read_response(stream: trio.SocketStream, buffer: bytearray) -> tuple[bytes, bytes]:
    """One Content-Length response (head, body) off `stream`; leftovers stay in `buffer`."""
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive_some()
    end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:end])
    length = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(buffer) < end + length:
        buffer += await stream.receive_some()
    body = bytes(buffer[end : end + length])
    del buffer[: end + length]
    return head, body


async def test_keep_alive_and_pipelining(sim: SimServer) -> None:
    with trio.fail_after(DEADLINE):
        stream = await trio.open_tcp_stream(sim.host, sim.port)
        async with stream:
            buffer = bytearray()
            await stream.send_all(chat_request())
            first = await read_response(stream, buffer)
            await stream.send_all(chat_request() * 3)  # pipelined
            rest = [await read_response(stream, buffer) for _ in range(3)]
    for head, body in [first, *rest]:
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert json.loads(body)["object"] == "chat.completion"
    assert sim.stats.connections_total == 1
    assert sim.stats.requests_total == 4


async def test_connection_close_is_honoured(sim: SimServer) -> None:
    with trio.fail_after(DEADLINE):
        stream = await trio.open_tcp_stream(sim.host, sim.port)
        async with stream:
            await stream.send_all(chat_request("connection: close\r\n"))
            received = b""
            while chunk := await stream.receive_some():
                received += chunk
    assert b"\r\nconnection: close\r\n" in received


async def test_chunked_request_and_continue(sim: SimServer) -> None:
    head = (
        "POST /openai/v1/chat/completions HTTP/1.1\r\nauthorization: Bearer k\r\n"
        "transfer-encoding: chunked\r\nexpect: 100-continue\r\n\r\n"
    )
    with trio.fail_after(DEADLINE):
        stream = await trio.open_tcp_stream(sim.host, sim.port)
        async with stream:
            await stream.send_all(head.encode())
            continued = await stream.receive_some()
            half = len(CHAT) // 2
            for piece in (CHAT[:half], CHAT[half:]):
                await stream.send_all(f"{len(piece):x}\r\n{piece}\r\n".encode())
            await stream.send_all(b"0\r\n\r\n")
            _, body = await read_response(stream, bytearray())
    assert continued == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert json.loads(body)["object"] == "chat.completion"


async def test_malformed_request_gets_400_and_close(sim: SimServer) -> None:
    with trio.fail_after(DEADLINE):
        stream = await trio.open_tcp_stream(sim.host, sim.port)
        async with stream:
            await stream.send_all(b"NOT HTTP\r\n\r\n")
            received = b""
            while chunk := await stream.receive_some():
                received += chunk
    assert received.startswith(b"HTTP/1.1 400 Bad Request\r\n")


@pytest.fixture
async def http(sim: SimServer) -> Any:
    async with httpx.AsyncClient(base_url=f"http://{sim.host}:{sim.port}") as client:
        yield client


async def test_unknown_paths_are_404(http: httpx.AsyncClient) -> None:
    with trio.fail_after(DEADLINE):
        for path in ("/", "/nobody/v1/x", "/openai/v1/nothing"):
            response = await http.get(path)
            assert response.status_code == 404
            assert response.json()["error"]["type"] == "invalid_request_error"


async def test_control_faults(http: httpx.AsyncClient, sim: SimServer) -> None:
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    auth = {"authorization": "Bearer k"}
    with trio.fail_after(DEADLINE):
        created = await http.post("/_sim/faults", json={"model": "gpt-4o", "status": 503})
        assert created.status_code == 201
        assert created.json()["status"] == 503
        assert (await http.get("/_sim/faults")).json()["faults"][0]["model"] == "gpt-4o"
        failed = await http.post("/openai/v1/chat/completions", json=chat, headers=auth)
        assert failed.status_code == 503
        assert (await http.delete("/_sim/faults")).json() == {"cleared": 1}
        ok = await http.post("/openai/v1/chat/completions", json=chat, headers=auth)
        assert ok.status_code == 200
        bad = await http.post("/_sim/faults", json={"status": 500})
        assert bad.status_code == 400
        unknown = await http.post("/_sim/faults", json={"model": "m", "oops": 1})
        assert unknown.status_code == 400


async def test_control_stats_and_config(http: httpx.AsyncClient, sim: SimServer) -> None:
    with trio.fail_after(DEADLINE):
        await http.get("/openai/v1/models", headers={"authorization": "Bearer k"})
        stats = (await http.get("/_sim/stats")).json()
        assert stats["by_path"]["/openai/v1/models"] == 1
        assert stats["open_connections"] == 1
        reset = (await http.delete("/_sim/stats")).json()
        assert reset["requests_total"] == 0 and reset["by_path"] == {}
        changed = await http.post("/_sim/config", json={"ttft_ms": 5, "tokens_per_second": 50})
        assert changed.json()["ttft_ms"] == 5.0
        assert sim.config.tokens_per_second == 50
        refused = await http.post("/_sim/config", json={"ttft_ms": -1})
        assert refused.status_code == 400


async def test_bad_fault_header_is_400(http: httpx.AsyncClient) -> None:
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": "Bearer k", "x-sim-fault": "{not json"}
    with trio.fail_after(DEADLINE):
        response = await http.post("/openai/v1/chat/completions", json=chat, headers=headers)
    assert response.status_code == 400


async def test_a_failing_handler_answers_500_and_the_server_lives_on(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(request: SimRequest, context: SimContext) -> SimResponse:
        raise RuntimeError("bug")

    routes = {**server_module.VENDOR_ROUTES, "broken": [Route("GET", "/x", broken)]}
    monkeypatch.setattr(server_module, "VENDOR_ROUTES", routes)
    sim: SimServer = await nursery.start(server_module.serve_simulator, "127.0.0.1", 0)
    with trio.fail_after(DEADLINE):
        async with httpx.AsyncClient(base_url=sim.base_url("broken")) as client:
            assert (await client.get("/x")).status_code == 500
            assert (await client.get("/x")).status_code == 500


async def test_cancelling_the_simulator_closes_connections() -> None:
    async with trio.open_nursery() as inner:
        sim: SimServer = await inner.start(server_module.serve_simulator, "127.0.0.1", 0)
        stream = await trio.open_tcp_stream(sim.host, sim.port)
        await stream.send_all(chat_request())
        await read_response(stream, bytearray())
        assert sim.stats.open_connections == 1
        inner.cancel_scope.cancel()
    with trio.fail_after(DEADLINE):
        assert await stream.receive_some() == b""  # the server closed its side
    await stream.aclose()
    with pytest.raises(OSError):
        await trio.open_tcp_stream(sim.host, sim.port)
