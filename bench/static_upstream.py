"""A static upstream for section 7: every chat completion answered with one canned body.

Section 7 asks what a second gateway worker does with the second core of a 2-core
machine. The upstream there stands in for a vendor on another machine, yet on this
machine it takes its CPU from the same two cores as the workers: the simulator (trio, a
real protocol model) spends 0.27-0.41 CPU-ms per request there, a tenth of what the
gateway spends, on the core the second worker needs. This server answers from one
precomputed byte string in a `selectors` loop, for about 0.08 CPU-ms per request, so
the section measures the gateway rather than its neighbour (the section still shows the
figures with the simulator as upstream beside it).

It is a load fixture, not a simulator: it reads each request's framing (keep-alive,
`Content-Length` or chunked, pipelining, through the simulator's own parser) and its
method and path, nothing else. `POST .../chat/completions` gets the completion the
simulator gives the benchmark's prompt (20 tokens), `GET /health` a 200 (readiness),
`POST /v1/traces` an OTLP/HTTP collector's empty success (section 9 exports its spans
here), any other request a 404.

    python -m bench.static_upstream --port 8101
"""

from __future__ import annotations

import argparse
import contextlib
import json
import selectors
import socket
from collections.abc import Sequence
from typing import cast

from providers.sim.http11 import ProtocolError, RequestParser, ResponseWriter

RECEIVE_BYTES = 65536
SEND_TIMEOUT_S = 5.0
CONTENT = (
    "Metal answer value planet engine window metal token green route carbon bright."
    " System market circle simple island summer yellow water."
)
COMPLETION = {
    "id": "chatcmpl-static",
    "object": "chat.completion",
    "created": 1_795_497_167,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": CONTENT, "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 8, "completion_tokens": 20, "total_tokens": 28},
    "system_fingerprint": "fp_static0001",
}
NOT_FOUND = {
    "error": {
        "message": "The static upstream answers POST .../chat/completions only.",
        "type": "invalid_request_error",
        "code": "not_found",
    }
}


def _traces_accepted(writer: ResponseWriter, keep_alive: bool) -> bytes:
    """An OTLP/HTTP export's success: an empty `ExportTraceServiceResponse` (no bytes)."""
    return writer.head(200, "application/x-protobuf", {}, content_length=0, keep_alive=keep_alive)


def _answer(writer: ResponseWriter, status: int, payload: object, keep_alive: bool) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = writer.head(
        status, "application/json", {}, content_length=len(body), keep_alive=keep_alive
    )
    return head + body


class Answers:
    """Every byte string the server sends, rendered once, for keep-alive and for close."""

    def __init__(self) -> None:
        self.writer = ResponseWriter()
        self.completion = self._both(200, COMPLETION)
        self.not_found = self._both(404, NOT_FOUND)
        self.health = self._both(200, {"status": "ok"})
        self.traces = {alive: _traces_accepted(self.writer, alive) for alive in (True, False)}

    def _both(self, status: int, payload: object) -> dict[bool, bytes]:
        return {alive: _answer(self.writer, status, payload, alive) for alive in (True, False)}

    def to(self, method: str, path: str, keep_alive: bool) -> bytes:
        if method == "POST" and path.endswith("/chat/completions"):
            return self.completion[keep_alive]
        if method == "GET" and path == "/health":
            return self.health[keep_alive]
        if method == "POST" and path == "/v1/traces":
            return self.traces[keep_alive]
        return self.not_found[keep_alive]

    def refusal(self, error: ProtocolError) -> bytes:
        payload = {"error": {"message": str(error), "type": "invalid_request_error"}}
        return _answer(self.writer, error.status, payload, keep_alive=False)


def replies(parser: RequestParser, data: bytes, answers: Answers) -> tuple[bytes, bool]:
    """Feed `data`; the answers to every request it completes, and whether to keep the
    connection (False after a request asking to close, or one the parser refuses)."""
    parser.feed(data)
    out: list[bytes] = []
    try:
        while (request := parser.next_request()) is not None:
            out.append(answers.to(request.method, request.path, request.keep_alive))
            if not request.keep_alive:
                return b"".join(out), False
    except ProtocolError as exc:
        out.append(answers.refusal(exc))
        return b"".join(out), False
    return b"".join(out), True


def serve(listener: socket.socket) -> None:
    """Answer on `listener` until killed: one thread, non-blocking sockets, replies sent
    whole (see `_send`)."""
    answers = Answers()
    selector = selectors.DefaultSelector()
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                _accept(listener, selector)
            else:
                _read(cast(socket.socket, key.fileobj), key.data, selector, answers)


def _accept(listener: socket.socket, selector: selectors.BaseSelector) -> None:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return
    conn.setblocking(False)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    selector.register(conn, selectors.EVENT_READ, RequestParser())


def _read(
    conn: socket.socket, parser: RequestParser, selector: selectors.BaseSelector, answers: Answers
) -> None:
    try:
        data = conn.recv(RECEIVE_BYTES)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    keep = bool(data)
    if data:
        out, keep = replies(parser, data, answers)
        keep = _send(conn, out) and keep
    if not keep:
        selector.unregister(conn)
        conn.close()


def _send(conn: socket.socket, out: bytes) -> bool:
    """Send `out` whole: at once when the socket's buffer takes it (nearly always), else
    waiting up to `SEND_TIMEOUT_S`. False when the peer is gone or too slow."""
    try:
        try:
            sent = conn.send(out) if out else 0
        except BlockingIOError:
            sent = 0
        if sent < len(out):
            conn.settimeout(SEND_TIMEOUT_S)
            conn.sendall(out[sent:])
            conn.setblocking(False)
    except OSError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    listener = socket.create_server((args.host, args.port), backlog=1024, reuse_port=False)
    print(f"static upstream on {args.host}:{args.port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        serve(listener)


if __name__ == "__main__":
    main()
