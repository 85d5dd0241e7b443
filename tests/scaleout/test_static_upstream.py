"""Section 7's static upstream: it speaks HTTP/1.1 as clients expect (keep-alive,
pipelining, requests split across reads, bad input refused) and the OpenAI chat
completion shape the official client parses."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from bench.procs import free_port
from bench.static_upstream import Answers, replies
from providers.sim.http11 import RequestParser

CHAT = (
    b"POST /openai/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
    b"\r\ncontent-length: 2\r\n\r\n{}"
)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "bench.static_upstream", "--port", str(port)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        give_up = time.monotonic() + 20
        while time.monotonic() < give_up:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def test_the_official_client_gets_a_chat_completion(upstream: str) -> None:
    client = openai.OpenAI(base_url=upstream + "/openai/v1", api_key="sim-key", max_retries=0)
    for _ in range(3):  # one keep-alive connection, several requests
        answer = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Say something."}]
        )
        assert answer.choices[0].message.content
        assert answer.usage is not None and answer.usage.total_tokens == 28


def test_other_paths_are_404_and_health_is_200(upstream: str) -> None:
    with httpx.Client(base_url=upstream) as client:
        assert client.get("/health").json() == {"status": "ok"}
        missing = client.post("/openai/v1/embeddings", json={"input": "x"})
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"


def test_pipelined_and_split_requests_each_get_their_answer(upstream: str) -> None:
    port = int(upstream.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(CHAT + CHAT + CHAT[:30])
        time.sleep(0.05)
        sock.sendall(CHAT[30:])
        received = b""
        while received.count(b"HTTP/1.1 200") < 3 or not received.endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, "the upstream closed a keep-alive connection"
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 3


def test_a_malformed_request_is_refused_and_the_connection_closed() -> None:
    answers = Answers()
    out, keep = replies(RequestParser(), b"GARBAGE\r\n\r\n", answers)
    assert out.startswith(b"HTTP/1.1 400") and not keep
    closing = CHAT.replace(b"host: x", b"host: x\r\nconnection: close")
    out, keep = replies(RequestParser(), closing + CHAT, answers)
    assert out.count(b"HTTP/1.1 200") == 1 and not keep
