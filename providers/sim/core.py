"""The simulator's contract: requests, responses, routes and per-request context.

Every vendor module of the simulator (`providers/sim/<vendor>.py`) exposes
`ROUTES: list[Route]`; the server dispatches on the path *after* the vendor prefix
(`/openai`, `/anthropic`, `/google`, `/mistral`, `/cohere`, `/elevenlabs`). Handlers are
plain async functions of a `SimRequest` and a `SimContext` returning either a whole
`SimResponse` or a `SimStream` whose body the server sends with chunked encoding as the
iterator produces it. Content, timing and faults come from the context so that every
vendor answers with the same deterministic text at the same pace.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from trio_websocket import WebSocketConnection

    from providers.sim.audio import SimAudio


@attrs.frozen(slots=True)
class SimRequest:
    method: str
    path: str  # after the vendor prefix, e.g. "/v1/chat/completions"
    query: Mapping[str, str]
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    path_params: Mapping[str, str] = attrs.field(factory=dict)

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@attrs.frozen(slots=True)
class SimResponse:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = attrs.field(factory=dict)

    @classmethod
    def of_json(
        cls, payload: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> SimResponse:
        return cls(status, json.dumps(payload).encode(), headers=headers or {})


@attrs.frozen(slots=True)
class SimStream:
    """A streamed answer; the server writes each chunk as soon as the iterator yields it.

    When the client goes away the server stops iterating and closes the iterator, and
    records the disconnect in its stats.
    """

    chunks: AsyncIterator[bytes]
    status: int = 200
    content_type: str = "text/event-stream"
    headers: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(slots=True)
class SimUpgrade:
    """An accepted WebSocket upgrade: the server completes the handshake (trio-websocket)
    and runs `session` on the socket; the connection closes when it returns.

    A handler that refuses the upgrade answers a plain `SimResponse` instead, which a
    WebSocket client reads as a rejected handshake with that status and body.
    """

    session: Callable[[WebSocketConnection], Awaitable[None]]


Answer = SimResponse | SimStream | SimUpgrade
Handler = Callable[[SimRequest, "SimContext"], Awaitable[Answer]]


@attrs.frozen(slots=True)
class Route:
    """`pattern` may hold `{name}` parts matching one path segment (no `/`), and a
    literal `:` suffix as Google uses (`/v1beta/models/{model}:generateContent`)."""

    method: str
    pattern: str
    handler: Handler
    regex: re.Pattern[str] = attrs.field(init=False)

    @regex.default
    def _compile(self) -> re.Pattern[str]:
        escaped = re.escape(self.pattern).replace(r"\{", "{").replace(r"\}", "}")
        return re.compile("^" + re.sub(r"{(\w+)}", r"(?P<\1>[^/:]+)", escaped) + "$")

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if method != self.method:
            return None
        found = self.regex.match(path)
        return found.groupdict() if found else None


class SimContext:
    """What a handler may use besides its request: content, pacing, faults, stats.

    Implemented by the simulator server (see `providers/sim/server.py`); this protocol
    names the methods vendor modules rely on.
    """

    def reply_tokens(
        self, prompt: str, max_tokens: int | None, schema: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The deterministic answer to `prompt`, as a list of token strings: a scripted
        reply when one is queued, else JSON satisfying `schema` when one is given (a
        structured output), else prose."""
        raise NotImplementedError

    def fault(self, model: str, vendor: str) -> Fault | None:
        """The fault switched on for this model (consumes one use), or None."""
        raise NotImplementedError

    def pace(self, tokens: list[str], fault: Fault | None) -> AsyncGenerator[list[str], None]:
        """Yield the tokens in groups, waiting time-to-first-token then tokens/second;
        a fault may stall or stop the stream part-way (raising `StreamCut`).

        An async generator: close it (`contextlib.aclosing`) when stopping early."""
        raise NotImplementedError

    def audio(self) -> SimAudio:
        """The simulator's speech engine (synthesis, measuring audio) and its limiter."""
        raise NotImplementedError

    def next_transcript(self) -> str | None:
        """The next scripted transcription text (`POST /_sim/transcripts`), or None: a
        transcription endpoint then answers its deterministic default."""
        return None

    async def pace_whole(self, tokens: list[str], fault: Fault | None) -> None:
        """Wait as long as streaming `tokens` would take: a whole (non-streamed) answer
        is sent when its last token is ready. A fault may raise `StreamCut` here too."""
        async with aclosing(self.pace(tokens, fault)) as groups:
            async for _ in groups:
                pass


class StreamCut(Exception):
    """Raised inside a stream iterator to make the server drop the connection abruptly."""


class ConnectionReset(StreamCut):
    """Raised to make the server reset the connection (RST) without any answer."""


@attrs.frozen(slots=True)
class Fault:
    """A failure switched on for a model (via `POST /_sim/faults`).

    `status`: answer with this HTTP status and the vendor's error body (`code`/`message`
    fill it); `delay_ms`: wait before answering (a timeout test, or a slow first byte);
    `stop_after_chunks`: a stream drops the connection after this many chunks;
    `stall_ms`: a stream stalls this long after `stop_after_chunks` chunks instead of
    dropping; `reset`: after the delay, the connection is reset (TCP RST) with no answer
    at all; `malformed`: a whole JSON answer is cut in half (invalid JSON) and a text
    stream (SSE, JSON lines) gets an event that is not JSON after its first chunk
    (binary audio streams are left as they are); `remaining`: how many
    requests it still applies to (None: until cleared); `probability`: the chance that it
    applies to a matching request (1.0: every one). The draws are seeded, so a simulator
    given the same requests in the same order faults the same ones (see `FaultBook`); a
    request it spares does not use up `remaining`.
    """

    model: str
    vendor: str | None = None
    status: int | None = None
    code: str | None = None
    message: str | None = None
    delay_ms: int = 0
    stop_after_chunks: int | None = None
    stall_ms: int = 0
    remaining: int | None = None
    probability: float = 1.0
    reset: bool = False
    malformed: bool = False
