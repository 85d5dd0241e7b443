"""The answers the server gives on its own, before (or beside) the application, in the
spec's error envelope.

Hypercorn answers an HTTP/1.1 request it cannot parse (a bad or negative Content-Length, a
head over the size limit, a malformed request line, a body cut short) with an empty body;
the connection guard (`gateway.platform.connections`) answers a head that is too slow and a
connection past the cap. Each of those is an `ApiError` here, so a client reads the same
`{error: {message, type, code, doc_url}}` as from any route, and `wire_answer` writes one as
raw HTTP/1.1 bytes where no HTTP state machine is involved (the connection is closed after
it).

`EnvelopeH11Protocol` is Hypercorn's HTTP/1.1 protocol with its error answer replaced;
`GuardedProtocolWrapper` builds it instead of Hypercorn's. Checked against Hypercorn 0.18.0
and h11 0.16.0 (`tests/hardening/test_hypercorn_shim.py` fails when the methods it replaces
change shape).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from itertools import chain

import h11
from hypercorn.config import Config
from hypercorn.events import Event, RawData
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.typing import AppWrapper, ConnectionState, TaskGroup, WorkerContext

from gateway.platform.errors import ApiError
from gateway.platform.jsonio import dumps

# h11's `error_status_hint` for what it cannot parse, and how we name each.
_PARSE_ERRORS = {
    400: ("malformed_request", "The request is not valid HTTP/1.1: {detail}."),
    431: (
        "request_header_too_large",
        "The request line and headers are longer than the gateway accepts ({limit} bytes).",
    ),
    501: (
        "unsupported_transfer_encoding",
        "The request uses a transfer coding the gateway does not implement: {detail}.",
    ),
}
# h11 quotes an offending line as `bytearray(b'...')`; the quote is shown as text, cut to
# this many characters.
DETAIL_LIMIT = 200
_BYTES_REPR = re.compile(r"""bytearray\(b(['"])(.*)\1\)""")


def parse_error(status: int, detail: str, *, header_limit: int) -> ApiError:
    """The answer to a request Hypercorn's parser (h11) refused with `status`."""
    code, template = _PARSE_ERRORS.get(status, _PARSE_ERRORS[400])
    detail = _BYTES_REPR.sub(r"'\2'", detail)[:DETAIL_LIMIT].rstrip(".")
    message = template.format(detail=detail, limit=header_limit)
    return ApiError(status if status in _PARSE_ERRORS else 400, code, message)


def header_timeout(timeout_s: float) -> ApiError:
    return ApiError(
        408,
        "request_timeout",
        f"The request line and headers did not arrive within {timeout_s:g} s.",
    )


def too_many_connections(limit: int, *, per_address: bool) -> ApiError:
    held = "this address holds" if per_address else "the gateway holds"
    return ApiError(
        503,
        "too_many_connections",
        f"Too many open connections: {held} {limit}, the most it accepts. "
        "Retry shortly, or reuse a connection (keep-alive).",
        type="server_error",
        retry_after=1,
        headers={"Retry-After": "1"},
    )


def wire_answer(error: ApiError) -> bytes:
    """`error` as a whole HTTP/1.1 response that closes the connection."""
    body = dumps(error.body())
    lines = [
        f"HTTP/1.1 {error.status} {HTTPStatus(error.status).phrase}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name.lower()}: {value}" for name, value in error.headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class EnvelopeH11Protocol(H11Protocol):
    """Hypercorn's HTTP/1.1 protocol, answering what h11 refuses in the error envelope.

    Hypercorn calls `_send_error_response(status)` only from the handler of the
    `h11.RemoteProtocolError` that `next_event` raised, so that error (its message says
    what was wrong) is the exception being handled. The answer goes out in one write:
    the application's task may close the connection meanwhile, and a close waits for a
    write in progress, not between two (`GuardedConnection._close`).
    """

    async def _send_error_response(self, status_code: int) -> None:
        refused = sys.exception()
        detail = str(refused) if isinstance(refused, h11.RemoteProtocolError) else "unreadable"
        error = parse_error(status_code, detail, header_limit=self.config.h11_max_incomplete_size)
        body = dumps(error.body())
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        events = (
            h11.Response(
                status_code=error.status,
                headers=list(chain(headers, self.config.response_headers("h11"))),
            ),
            h11.Data(data=body),
            h11.EndOfMessage(),
        )
        try:
            data = b"".join(self.connection.send(event) or b"" for event in events)
        except h11.LocalProtocolError:
            return  # the application's answer began first: it is the answer
        await self.send(RawData(data=data))


class GuardedProtocolWrapper(ProtocolWrapper):
    """Hypercorn's protocol choice, with `EnvelopeH11Protocol` for HTTP/1.1 (HTTP/2,
    reached by an upgrade or prior knowledge, is Hypercorn's own)."""

    def __init__(
        self,
        app: AppWrapper,
        config: Config,
        context: WorkerContext,
        task_group: TaskGroup,
        state: ConnectionState,
        ssl: bool,
        client: tuple[str, int] | None,
        server: tuple[str, int] | None,
        send: Callable[[Event], Awaitable[None]],
        alpn_protocol: str | None = None,
    ) -> None:
        super().__init__(
            app, config, context, task_group, state, ssl, client, server, send, alpn_protocol
        )
        if isinstance(self.protocol, H11Protocol):
            self.protocol = EnvelopeH11Protocol(
                app, config, context, task_group, state, ssl, client, server, send
            )
