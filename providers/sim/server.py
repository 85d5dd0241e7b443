"""The simulator's HTTP server: raw trio sockets, HTTP/1.1 keep-alive, vendor dispatch.

One server answers every vendor's protocol under its own path prefix (`/openai/...`,
later `/anthropic/...` and the rest) plus the control API under `/_sim`. It is written
on bare trio streams with a hand-made codec (`http11`) because benchmarks use it as the
upstream whose cost must stay far below the gateway's: it serves several thousand
requests a second on one core.

`SimServer` holds the state one running simulator shares between connections (pacing
config, faults, counters) and is the `SimContext` handed to vendor handlers.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import json
import logging
import os
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import attrs
import trio

from providers.sim import content
from providers.sim.audio import SimAudio
from providers.sim.contexts import OneRequestFault, Recording
from providers.sim.control import control_routes
from providers.sim.core import (
    Answer,
    ConnectionReset,
    Fault,
    Route,
    SimContext,
    SimRequest,
    SimResponse,
    SimStream,
    SimUpgrade,
    StreamCut,
)
from providers.sim.faults import FaultBook, FaultError, fault_from_header
from providers.sim.garble import aclose_stream, after_fault
from providers.sim.http11 import (
    CONTINUE,
    LAST_CHUNK,
    MAX_HEAD_BYTES,
    ParsedRequest,
    ProtocolError,
    RequestParser,
    ResponseWriter,
    chunk_frame,
)
from providers.sim.websocket import run_upgrade
from providers.sim.wire import Connection, PeerGone, accept_loop

log = logging.getLogger(__name__)

# Vendor modules of the simulator: each `providers.sim.<name>` exports `ROUTES` and is
# mounted under `/<name>`. Add a vendor by adding its module name here.
VENDOR_MODULES: tuple[str, ...] = (
    "openai",
    "anthropic",
    "mistral",
    "cohere",
    "google",
    "elevenlabs",
)

CONTROL_PREFIX = "_sim"
MAX_SCRIPTED = 10_000  # scripted transcripts held at once
RECORDED_REQUESTS = 64  # the last vendor requests kept for `GET /_sim/requests`
RECORDED_BODY_BYTES = 1 << 20  # a larger body (an upload) is recorded without its bytes


@attrs.frozen(slots=True)
class RecordedRequest:
    """A vendor request as the simulator received it, so a test can prove a parameter
    reached the vendor in its wire form. The body is kept raw (decoding every request
    would cost the benchmarks) and only up to `RECORDED_BODY_BYTES`."""

    vendor: str
    method: str
    path: str
    raw: bytes | None

    @property
    def body(self) -> Any:
        """The decoded JSON body; None when there is none, it is not JSON, or too large."""
        try:
            return json.loads(self.raw) if self.raw else None
        except ValueError:
            return None

    def to_json(self) -> dict[str, Any]:
        return {"vendor": self.vendor, "method": self.method, "path": self.path, "body": self.body}


# Extra route modules of a vendor, mounted under the same prefix (a vendor module that
# would pass 600 lines grows a sibling instead).
VENDOR_EXTRAS: dict[str, tuple[str, ...]] = {
    "openai": ("openai_audio", "openai_realtime"),
    "elevenlabs": ("elevenlabs_tts", "elevenlabs_ws"),
    "mistral": ("mistral_audio", "mistral_live"),
    "google": ("google_stt", "google_tts", "google_embed"),
}


def _load_vendor_routes(names: tuple[str, ...]) -> dict[str, list[Route]]:
    return {
        name: [
            route
            # extras first: a sibling may take over a pattern and delegate (google_tts)
            for module in (*VENDOR_EXTRAS.get(name, ()), name)
            for route in importlib.import_module(f"providers.sim.{module}").ROUTES
        ]
        for name in names
    }


VENDOR_ROUTES: dict[str, list[Route]] = _load_vendor_routes(VENDOR_MODULES)


@attrs.frozen
class SimConfig:
    """Pacing of simulated answers; 0 disables the corresponding wait."""

    ttft_ms: float = 0
    tokens_per_second: float = 0
    default_max_tokens: int = 20


@attrs.define
class SimStats:
    """Counters of one simulator, readable in process or at `GET /_sim/stats`.

    `client_disconnects` counts clients that closed their connection while an answer was
    still being sent; `connections_cut` counts answers the simulator broke on purpose (a
    `stop_after_chunks` fault).
    """

    requests_total: int = 0
    connections_total: int = 0
    by_path: dict[str, int] = attrs.field(factory=dict)
    streams_started: int = 0
    streams_completed: int = 0
    client_disconnects: int = 0
    connections_cut: int = 0
    open_connections: int = 0
    open_requests: int = 0  # being answered now (waiting out a delay, or streaming)

    def count(self, path: str) -> None:
        self.requests_total += 1
        self.by_path[path] = self.by_path.get(path, 0) + 1

    def reset(self) -> None:
        """Zero every counter but the open ones, which describe the present."""
        fresh = SimStats(open_connections=self.open_connections, open_requests=self.open_requests)
        for field in attrs.fields(SimStats):
            setattr(self, field.name, getattr(fresh, field.name))

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class _Router:
    """Finds the route of a full path: the first segment picks the vendor."""

    static: dict[tuple[str, str], tuple[str, Route]]
    dynamic: dict[str, list[Route]]

    @classmethod
    def build(cls, mounts: Mapping[str, list[Route]]) -> _Router:
        static: dict[tuple[str, str], tuple[str, Route]] = {}
        dynamic: dict[str, list[Route]] = {}
        for prefix, routes in mounts.items():
            for route in routes:
                if "{" in route.pattern:
                    dynamic.setdefault(prefix, []).append(route)
                else:
                    static[(route.method, f"/{prefix}{route.pattern}")] = (prefix, route)
        return cls(static, dynamic)

    def find(self, method: str, path: str) -> tuple[str, Route, dict[str, str]] | None:
        """(vendor prefix, route, path parameters), or None when nothing matches."""
        hit = self.static.get((method, path))
        if hit is not None:
            return hit[0], hit[1], {}
        prefix, _, rest = path[1:].partition("/")
        for route in self.dynamic.get(prefix, ()):
            params = route.match(method, "/" + rest)
            if params is not None:
                return prefix, route, params
        return None


class SimServer(SimContext):
    """A running simulator: its address, pacing config, faults and counters."""

    def __init__(self, host: str, port: int, config: SimConfig) -> None:
        self.host = host
        self.port = port
        self.config = config
        self.stats = SimStats()
        self.faults = FaultBook()
        # Scripted transcription texts, used in order by the next transcriptions (bounded:
        # a script is a test's or a benchmark's, never an unbounded queue).
        self.transcripts: collections.deque[str] = collections.deque(maxlen=MAX_SCRIPTED)
        # Scripted chat replies, the same way: the next chat answers of any vendor say them.
        self.replies: collections.deque[str] = collections.deque(maxlen=MAX_SCRIPTED)
        # The last vendor requests, oldest first (bounded: a window for tests, not a log).
        self.requests: collections.deque[RecordedRequest] = collections.deque(
            maxlen=RECORDED_REQUESTS
        )
        self._writer = ResponseWriter()
        self._audio = SimAudio()
        self._router = _Router.build({**VENDOR_ROUTES, CONTROL_PREFIX: control_routes(self)})

    def next_transcript(self) -> str | None:
        return self.transcripts.popleft() if self.transcripts else None

    def audio(self) -> SimAudio:
        return self._audio

    def base_url(self, vendor: str) -> str:
        """Where a client of `vendor` points (OpenAI clients append `/v1` themselves)."""
        return f"http://{self.host}:{self.port}/{vendor}"

    # --- SimContext ----------------------------------------------------------------

    def reply_tokens(
        self, prompt: str, max_tokens: int | None, schema: Mapping[str, Any] | None = None
    ) -> list[str]:
        count = max_tokens if max_tokens is not None else self.config.default_max_tokens
        if self.replies:
            return content.scripted_tokens(self.replies.popleft(), count)
        if schema is not None:
            return content.scripted_tokens(json.dumps(content.arguments_for(schema, prompt)), count)
        return content.reply_tokens(prompt, count)

    def fault(self, model: str, vendor: str) -> Fault | None:
        return self.faults.take(model, vendor)

    def pace(self, tokens: list[str], fault: Fault | None) -> AsyncGenerator[list[str], None]:
        config = self.config
        return content.pace(tokens, config.ttft_ms, config.tokens_per_second, fault)

    async def pace_whole(self, tokens: list[str], fault: Fault | None) -> None:
        config = self.config
        if fault is not None and fault.stop_after_chunks is not None:
            await super().pace_whole(tokens, fault)
            return
        # Without a fault, one sleep does what iterating `pace` would, far cheaper.
        delay = config.ttft_ms / 1000
        if config.tokens_per_second > 0 and tokens:
            delay += (len(tokens) - 1) / config.tokens_per_second
        if delay > 0:
            await trio.sleep(delay)

    # --- connections ---------------------------------------------------------------

    async def handle_connection(self, conn: Connection) -> None:
        """Serve one client connection until it closes, errs or asks to close.

        Cancellation (server shutdown) closes the connection wherever it is.
        """
        self.stats.open_connections += 1
        self.stats.connections_total += 1
        try:
            await self._serve(conn)
        except PeerGone:
            pass  # only raised outside an answer: the client left between requests
        finally:
            self.stats.open_connections -= 1
            conn.close()

    async def _serve(self, conn: Connection) -> None:
        parser = RequestParser()
        while True:
            try:
                parsed = await _read_request(conn, parser)
            except ProtocolError as exc:
                await conn.send_all(self._protocol_error(exc))
                return
            if parsed is None or not await self._respond(conn, parser, parsed):
                return

    async def _respond(
        self, conn: Connection, parser: RequestParser, parsed: ParsedRequest
    ) -> bool:
        """Answer one request; True when the connection may serve another."""
        self.stats.open_requests += 1
        try:
            return await self._answer(conn, parser, parsed)
        finally:
            self.stats.open_requests -= 1

    async def _answer(self, conn: Connection, parser: RequestParser, parsed: ParsedRequest) -> bool:
        try:
            if self._may_wait():
                answer = await self._dispatch_watched(conn, parser, parsed)
            else:
                answer = await self._dispatch(parsed)
        except StreamCut as cut:
            if isinstance(cut, ConnectionReset):
                conn.reset_on_close()
            self.stats.connections_cut += 1
            return False
        if answer is None:
            self.stats.client_disconnects += 1  # the client left while we were waiting
            return False
        if isinstance(answer, SimStream):
            return await self._send_stream(conn, parser, answer, parsed.keep_alive)
        if isinstance(answer, SimUpgrade):
            await run_upgrade(conn, parser, parsed, answer, self.stats)
            return False
        head = self._writer.head(
            answer.status,
            answer.content_type,
            answer.headers,
            content_length=len(answer.body),
            keep_alive=parsed.keep_alive,
        )
        try:
            await conn.send_all(head + answer.body)
        except PeerGone:
            self.stats.client_disconnects += 1
            return False
        return parsed.keep_alive

    def _may_wait(self) -> bool:
        """Whether answering may take a while (pacing, or a fault that delays)."""
        config = self.config
        return bool(config.ttft_ms or config.tokens_per_second or self.faults.active())

    async def _dispatch_watched(
        self, conn: Connection, parser: RequestParser, parsed: ParsedRequest
    ) -> Answer | None:
        """`_dispatch` while watching the client: None when it hung up meanwhile, so a
        gateway that abandons a slow request (a lost hedge race) is seen doing so."""
        answer: Answer | None = None
        cut: StreamCut | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch_peer, conn, parser, nursery.cancel_scope)
            try:
                answer = await self._dispatch(parsed)
            except StreamCut as exc:
                cut = exc  # raised outside the nursery: not wrapped in an exception group
            nursery.cancel_scope.cancel()
        if cut is not None:
            raise cut
        return answer

    async def _dispatch(self, parsed: ParsedRequest) -> Answer:
        found = self._router.find(parsed.method, parsed.path)
        if found is None:
            self.stats.count("(unknown)")
            return _not_found(parsed)
        prefix, route, params = found
        self.stats.count(f"/{prefix}{route.pattern}")
        if prefix != CONTROL_PREFIX:
            self.requests.append(_recorded(prefix, parsed))
        request = SimRequest(
            parsed.method,
            parsed.path[len(prefix) + 1 :],
            parsed.query,
            parsed.headers,
            parsed.body,
            params,
        )
        context = self._context_for(parsed.headers)
        if isinstance(context, SimResponse):
            return context
        if context is self and not self.faults.active():
            return await self._handle(route, request, context)  # no fault can apply
        recording = Recording(context)
        answer = await self._handle(route, request, recording)
        return after_fault(answer, recording.taken)

    async def _handle(self, route: Route, request: SimRequest, context: SimContext) -> Answer:
        try:
            return await route.handler(request, context)
        except StreamCut:
            raise
        except Exception:
            log.exception("simulator handler failed: %s %s", request.method, request.path)
            return _error(500, "simulator handler failed; see the simulator's log")

    def _context_for(self, headers: Mapping[str, str]) -> SimContext | SimResponse:
        """The server itself, or a per-request context when `x-sim-fault` is given."""
        header = headers.get("x-sim-fault")
        if header is None:
            return self
        try:
            return OneRequestFault(self, self.faults, fault_from_header(header))
        except FaultError as exc:
            return _error(400, str(exc))

    async def _send_stream(
        self, conn: Connection, parser: RequestParser, answer: SimStream, keep: bool
    ) -> bool:
        """Send a streamed answer while watching for the client hanging up; True when
        the connection may serve another request."""
        self.stats.streams_started += 1
        completed = False
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch_peer, conn, parser, nursery.cancel_scope)
            completed = await self._pump(conn, answer, keep)
            nursery.cancel_scope.cancel()
        return completed and keep

    async def _pump(self, conn: Connection, answer: SimStream, keep: bool) -> bool:
        """Write the stream and count how it ended; True when it was sent whole.

        The counters change before the next checkpoint, so a client that has read the
        end of the stream already sees them.
        """
        head = self._writer.head(
            answer.status, answer.content_type, answer.headers, content_length=None, keep_alive=keep
        )
        chunks = answer.chunks
        try:
            await conn.send_all(head)
            async for data in chunks:
                if data:
                    await conn.send_all(chunk_frame(data))
            await conn.send_all(LAST_CHUNK)
        except PeerGone:
            self.stats.client_disconnects += 1
            return False
        except StreamCut:
            self.stats.connections_cut += 1
            return False
        except trio.Cancelled:
            if conn.peer_closed:
                self.stats.client_disconnects += 1  # `_watch_peer` saw the client leave
            raise
        except Exception:
            # A broken vendor stream must not take the server down: log it, cut it.
            log.exception("simulator stream failed")
            self.stats.connections_cut += 1
            return False
        finally:
            await aclose_stream(chunks)
        self.stats.streams_completed += 1
        return True

    def _protocol_error(self, exc: ProtocolError) -> bytes:
        body = json.dumps({"error": {"message": str(exc), "type": "invalid_request_error"}})
        encoded = body.encode()
        head = self._writer.head(
            exc.status, "application/json", {}, content_length=len(encoded), keep_alive=False
        )
        return head + encoded


def _recorded(vendor: str, parsed: ParsedRequest) -> RecordedRequest:
    raw = parsed.body if len(parsed.body) <= RECORDED_BODY_BYTES else None
    return RecordedRequest(vendor, parsed.method, parsed.path[len(vendor) + 1 :], raw)


async def _read_request(conn: Connection, parser: RequestParser) -> ParsedRequest | None:
    """The next request on the connection, or None when the client closed it.

    Waiting for bytes is this loop's checkpoint; when a request was already buffered
    (pipelining) an explicit one keeps a busy connection from starving the others.
    """
    parsed = parser.next_request()
    if parsed is not None:
        await trio.lowlevel.checkpoint()
        return parsed
    while parsed is None:
        if parser.take_continue():
            await conn.send_all(CONTINUE)
        data = await conn.receive()
        if not data:
            return None
        parser.feed(data)
        parsed = parser.next_request()
    return parsed


async def _watch_peer(conn: Connection, parser: RequestParser, on_gone: trio.CancelScope) -> None:
    """Cancel `on_gone` when the client closes the connection during a stream.

    Bytes arriving meanwhile are a pipelined next request: they go to the parser. Past
    a head's worth of them the watch stops, leaving the client to TCP backpressure.
    """
    while parser.buffered <= MAX_HEAD_BYTES:
        data = await conn.receive()
        if not data:
            conn.peer_closed = True
            on_gone.cancel()
            return
        parser.feed(data)


def _error(status: int, message: str) -> SimResponse:
    return SimResponse.of_json(
        {"error": {"message": message, "type": "invalid_request_error", "param": None}},
        status=status,
    )


def _not_found(parsed: ParsedRequest) -> SimResponse:
    body = {
        "error": {
            "message": f"Invalid URL ({parsed.method} {parsed.path})",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    return SimResponse.of_json(body, status=404)


async def serve_simulator(
    host: str,
    port: int,
    config: SimConfig = SimConfig(),
    *,
    task_status: trio.TaskStatus[SimServer] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on `host:port` (0: an ephemeral port) and serve until cancelled.

    Reports the `SimServer` through `task_status` once it listens. Every connection is
    handled in a nursery owned by this function; cancelling it closes the listener and
    every connection, mid-stream or not.
    """
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound_port = listeners[0].socket.getsockname()[1]
    server = SimServer(host, bound_port, config)
    async with trio.open_nursery() as nursery:
        for listener in listeners:
            nursery.start_soon(accept_loop, listener, server.handle_connection, nursery)
        task_status.started(server)


def run(host: str, port: int, config: SimConfig) -> None:
    """Run a simulator in the foreground until interrupted (Ctrl-C); prints its address."""

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            server: SimServer = await nursery.start(serve_simulator, host, port, config)
            print(f"simulator listening on http://{server.host}:{server.port}", flush=True)
            print(f"pid {os.getpid()}; vendors: {', '.join(VENDOR_ROUTES)}", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        trio.run(main)
