"""Raw HTTP/1.1 over real sockets, and a real `gateway serve` process, for the tests of
what clients can do to a connection (issue 31)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import trio

from tests.gateway.conftest import ADMIN_KEY
from tests.scaleout.processes import GatewayProcess
from tests.scaleout.redis_server import free_port

# The longest a test waits for a server that should answer or close; a hang is a failure.
ANSWER_DEADLINE_S = 10.0


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


async def connect(url: str, local_address: str | None = None) -> trio.SocketStream:
    host, port = address(url)
    return await trio.open_tcp_stream(host, port, local_address=local_address)


async def read_to_end(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as a
    close); a server that does neither within `ANSWER_DEADLINE_S` fails the test."""
    received = b""
    with trio.fail_after(ANSWER_DEADLINE_S):
        try:
            while chunk := await stream.receive_some():
                received += chunk
        except trio.BrokenResourceError:
            pass
    return received


@attrs.frozen
class Answer:
    """One HTTP/1.1 answer as read off the wire."""

    status: int
    headers: dict[str, str]
    body: bytes

    def error(self) -> dict[str, Any]:
        """The spec's envelope's `error` object (the body must be one)."""
        assert self.headers.get("content-type") == "application/json", self.headers
        envelope = json.loads(self.body)
        error = envelope["error"]
        assert {"message", "type", "code", "doc_url"} <= set(error), envelope
        return dict(error)


def parse_answer(raw: bytes) -> Answer:
    head, separator, rest = raw.partition(b"\r\n\r\n")
    assert separator, f"no complete answer: {raw[:200]!r}"
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", len(rest)))
    return Answer(int(status_line.split()[1]), headers, rest[:length])


@contextmanager
def gateway_process(tmp_path: Path, **env: str) -> Iterator[GatewayProcess]:
    """`gateway serve --demo` in its own process with `env` on top of the test settings;
    its log (text) is printed when the block fails."""
    port = free_port()
    log_path = tmp_path / "gateway.log"
    environ = dict(
        os.environ,
        GATEWAY_ADMIN_KEY=ADMIN_KEY,
        GATEWAY_SIM_TTFT_MS="0",
        GATEWAY_SIM_TOKENS_PER_SECOND="0",
        GATEWAY_LOG_FORMAT="text",
        GATEWAY_USAGE_WRITER="thread",
        **env,
    )
    command = [sys.executable, "-m", "gateway", "serve", "--demo", "--port", str(port)]
    command += ["--data-dir", str(tmp_path / "data")]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=environ, stdout=log, stderr=subprocess.STDOUT)
    gateway = GatewayProcess(f"http://127.0.0.1:{port}", process)
    try:
        yield gateway
    except BaseException:
        sys.stderr.write(log_path.read_text(errors="replace")[-20_000:])
        raise
    finally:
        gateway.stop()
