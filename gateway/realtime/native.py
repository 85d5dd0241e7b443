"""A realtime-native model relayed as it is: the client's Realtime session carried to
OpenAI's Realtime API instead of a cascade composed by the gateway (issue 35).

When `GET /v1/realtime?model=` names a realtime model of the catalog (`gpt-realtime`...)
whose provider is OpenAI and the workspace's OpenAI provider has the setting
`realtime_transport: "native"`, the session is relayed: the gateway opens the upstream
session through the engine (the provider's key, the address guard of its upstream
client, the plan's candidates raced until one says `session.created`), then carries
every message both ways unchanged. It still answers for the session:

- limits: the session is admitted under the key's limits when it opens, and each
  response when the upstream announces it (`response.created`): a refused response is
  cancelled upstream (`response.cancel`) and the client is told by an `error` event;
- usage: each `response.done`'s `usage` settles that response's hold (its tokens
  charged to the key and counted against the provider), and the session's total is
  priced and recorded by the engine when the session ends (one usage record, its
  latency the session's length); an upstream that breaks is recorded as the mapped error
  with what was used so far;
- ownership: one nursery holds both directions; a client that leaves cancels it, which
  closes the upstream at once; the client's socket has one writer (`streams.writer`).

The choice lives in the provider's settings (not a workspace-wide switch) because it is
a property of how the gateway reaches that vendor, like ElevenLabs' `speech_transport`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

import attrs
import orjson
import trio

from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.realtime.events import new_id
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine, Streaming
from gateway.upstream.facts import new_facts
from gateway.upstream.limits import Hold
from gateway.upstream.options import ServiceOptions
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target
from providers.base import Provider
from providers.errors import ProviderError, Unsupported
from providers.openai_realtime import OpenAIRealtime
from providers.types import Usage
from providers.vendor_socket import TextSocket, read_event
from streams.writer import single_writer

ENDPOINT = "realtime"  # the usage records' endpoint, as the cascade's
OPEN_TIMEOUT_S = 10.0  # the upstream's handshake and its `session.created`
DEFAULT_MAX_OUTPUT = 4096


class ClientSocket(Protocol):
    """The client's side (Quart's WebSocket, or a test's)."""

    async def receive(self) -> str | bytes: ...

    async def send(self, data: str) -> None: ...


@attrs.frozen
class Opened:
    """An upstream session and its first event (`session.created`), unread by the client."""

    socket: TextSocket
    first: str


@attrs.frozen
class Relay:
    """A session to relay: who, to which candidates, in which dialect."""

    principal: Principal
    headers: Mapping[str, str]
    plan: Plan
    beta: bool


@attrs.frozen
class NativeRelays:
    """Decides, admits and carries native sessions (the services they need)."""

    engine: Engine
    admission: Admission

    def relay_for(
        self,
        principal: Principal,
        headers: Mapping[str, str],
        model: str | None,
        intent: str | None,
        *,
        beta: bool,
    ) -> Relay | None:
        """The relay `?model=` asks for, or None: the cascade serves (see the module
        docstring for when). A model the key may not use is the plan's 4xx."""
        info = self.engine.catalog.model(model) if model and not intent else None
        if info is None or info.type != "realtime":
            return None
        adapter = self.engine.registry.adapter(principal.workspace_id, info.provider)
        if not isinstance(adapter, OpenAIRealtime) or not adapter.relays_realtime():
            return None
        principal.require("audio")
        plan = self.engine.plan_named(
            principal,
            model=info.id,
            provider=None,
            fallbacks=(),
            capability="realtime",
            service=ServiceOptions(),
            catalog_fallbacks=False,
        )
        return Relay(principal, headers, plan, beta)

    async def admit_session(self, relay: Relay) -> None:
        """The key's limits at the session's start (the 429 `ApiError` when spent)."""
        hold = await self.admit(relay, new_facts(ENDPOINT, relay.principal, relay.headers), 0)
        hold.settle(Usage())
        hold.release()

    @asynccontextmanager
    async def upstream(self, relay: Relay) -> AsyncIterator[Streaming[Opened]]:
        """The upstream session for the block, through the engine (its refusals are
        the mapped `ApiError`s); its usage is recorded when the block ends."""
        facts = new_facts(ENDPOINT, relay.principal, relay.headers)

        def opener(adapter: Provider, target: Target) -> Any:
            return _opened(adapter, target, relay.beta)

        stream = self.engine.open_stream(
            facts, relay.plan, opener, hold=None, timeout_s=OPEN_TIMEOUT_S
        )
        async with stream as opened:
            yield opened

    async def carry(self, relay: Relay, client: ClientSocket, stream: Streaming[Opened]) -> None:
        """Both directions until one side leaves; the session's usage recorded on
        every path (the engine's 200 with the total, or the upstream's mapped failure)."""
        meter = ResponseMeter(self, relay, stream.target)
        try:
            async with single_writer(client.send) as outbox, trio.open_nursery() as tasks:
                await outbox.send(stream.value.first)
                tasks.start_soon(_upward, client, stream.value.socket, outbox, meter)
                broke = await _downward(stream.value.socket, outbox, meter)
                tasks.cancel_scope.cancel()
        except BaseException as exc:
            if _cancelled(exc):  # the client ended the session: its normal end
                stream.finished(meter.total)
            raise
        finally:
            meter.release_all()
        raise stream.failed(broke, meter.total)

    async def admit(self, relay: Relay, facts: Any, prompt_tokens: int) -> Hold:
        """One request of the session under the key's limits (the refusal recorded)."""
        with self.engine.usage.refusing(facts, relay.plan.primary):
            return await self.admission.admit(
                relay.principal,
                ServiceOptions(),
                prompt_tokens=prompt_tokens,
                max_tokens=DEFAULT_MAX_OUTPUT,
            )


@asynccontextmanager
async def _opened(adapter: Provider, target: Target, beta: bool) -> AsyncIterator[Opened]:
    """One candidate's upstream session, entered once it said `session.created`."""
    if not isinstance(adapter, OpenAIRealtime):
        raise Unsupported(adapter.provider_id, "no Realtime API")
    query = {"model": target.upstream_model}
    async with adapter.realtime_socket(query, model=target.upstream_model, beta=beta) as socket:
        first = await socket.receive()
        event = read_event(first)
        if event.get("type") == "error":
            raise adapter.realtime_error(event, target.upstream_model)
        yield Opened(socket, first)


async def _upward(
    client: ClientSocket,
    upstream: TextSocket,
    outbox: trio.MemorySendChannel[str],
    meter: ResponseMeter,
) -> None:
    """The client's events up as they are (a binary frame is read as UTF-8 text); a
    `response.create` the key's limits refuse is answered by the error event instead.
    An upstream that closed stops it quietly: the downward side says why."""
    try:
        while True:
            received = await client.receive()
            message = received if isinstance(received, str) else received.decode()
            if '"response.create"' in message and _kind(message) == "response.create":
                refusal = await meter.asked()
                if refusal is not None:
                    await outbox.send(orjson.dumps(refusal).decode())
                    continue
            await upstream.send(message)
    except ProviderError:
        return


def _kind(message: str) -> Any:
    return read_event(message).get("type")


async def _downward(
    upstream: TextSocket, outbox: trio.MemorySendChannel[str], meter: ResponseMeter
) -> ProviderError:
    """The upstream's events down as they are, each seen by the meter first, until the
    upstream closes or breaks (what it returns: the session cannot go on)."""
    while True:
        try:
            message = await upstream.receive()
        except ProviderError as error:
            return error
        refused = await meter.seen(read_event(message))
        await outbox.send(message)
        if refused is not None:
            await upstream.send(orjson.dumps(refused.cancel).decode())
            await outbox.send(orjson.dumps(refused.event).decode())


@attrs.frozen
class Refused:
    """A response the key's limits refused: what cancels it, what tells the client."""

    cancel: Mapping[str, Any]
    event: Mapping[str, Any]


class ResponseMeter:
    """Each response's hold, from `response.created` to `response.done`; the total."""

    def __init__(self, relays: NativeRelays, relay: Relay, target: Target) -> None:
        self._relays, self._relay, self._target = relays, relay, target
        self._holds: dict[str, tuple[Any, Hold]] = {}  # by response id
        self._asked: list[tuple[Any, Hold]] = []  # admitted `response.create`s, in order
        self.total = Usage()
        self._last_input = 0

    async def seen(self, event: Mapping[str, Any]) -> Refused | None:
        kind, response = event.get("type"), event.get("response")
        if not isinstance(response, dict) or not isinstance(response.get("id"), str):
            return None
        if kind == "response.created":
            return await self._created(response["id"])
        if kind == "response.done":
            self._done(response["id"], _usage(response.get("usage")))
        return None

    async def asked(self) -> dict[str, Any] | None:
        """A client's `response.create`, admitted before it goes up (its hold waits for
        the `response.created` it brings); the error event when the limits refuse."""
        try:
            self._asked.append(await self._admit())
        except ApiError as error:
            return _error_event(error)
        return None

    async def _created(self, response_id: str) -> Refused | None:
        """A response the upstream started: the hold its `response.create` took, else
        (server VAD started it) one admitted now; refused, it is cancelled upstream."""
        if self._asked:
            self._holds[response_id] = self._asked.pop(0)
            return None
        try:
            self._holds[response_id] = await self._admit()
        except ApiError as error:
            cancel = {"type": "response.cancel", "response_id": response_id}
            return Refused(cancel, _error_event(error))
        return None

    async def _admit(self) -> tuple[Any, Hold]:
        relay = self._relay
        facts = new_facts(ENDPOINT, relay.principal, relay.headers)
        return facts, await self._relays.admit(relay, facts, self._last_input)

    def _done(self, response_id: str, usage: Usage) -> None:
        self.total += usage
        self._last_input = usage.prompt_tokens
        held = self._holds.pop(response_id, None)
        if held is not None:
            facts, hold = held
            self._relays.engine.settle(facts, self._target, hold, usage)
            hold.release()

    def release_all(self) -> None:
        """Holds of responses that never finished (the session ended first)."""
        for _facts, hold in [*self._holds.values(), *self._asked]:
            hold.release()
        self._holds.clear()
        self._asked.clear()


def _error_event(error: ApiError) -> dict[str, Any]:
    body = error.body()["error"] | {"event_id": None}
    return {"type": "error", "event_id": new_id("event"), "error": body}


def _cancelled(exc: BaseException) -> bool:
    """Whether `exc` is a cancellation (alone, or all of a group's)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_cancelled(inner) for inner in exc.exceptions)
    return isinstance(exc, trio.Cancelled)


def _usage(raw: Any) -> Usage:
    """A `response.done`'s usage: text and audio tokens together, and of them the audio
    ones (`input_token_details` / `output_token_details`), which are priced apart."""
    raw = raw if isinstance(raw, dict) else {}
    prompt, completion = _count(raw, "input_tokens"), _count(raw, "output_tokens")
    audio_in = _count(raw.get("input_token_details"), "audio_tokens")
    audio_out = _count(raw.get("output_token_details"), "audio_tokens")
    return Usage(
        prompt,
        completion,
        audio_prompt_tokens=min(audio_in, prompt),
        audio_completion_tokens=min(audio_out, completion),
    )


def _count(raw: Any, name: str) -> int:
    """A non-negative token count of a vendor's report (0 where it is missing or odd)."""
    value = raw.get(name) if isinstance(raw, dict) else None
    return value if isinstance(value, int) and value > 0 else 0
