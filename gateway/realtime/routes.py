"""The realtime family's routes: two wire dialects over one session core.

`GET /v1/realtime` speaks the OpenAI Realtime protocol (GA names; the beta's when the
client asks); `GET /v1/audio/sessions` speaks the gateway's first voice-session protocol
(`legacy`). Both open their cascade through the `SessionPlanner` the composition root
hands in (the pipelines family's, over its templates). A session that cannot start is
accepted, told why in an `error` event and closed with 4000 + the HTTP status it would
have had (4401, 4403, 4404, 4429): browsers cannot read an HTTP answer to a WebSocket
handshake.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Literal, cast

import attrs
from quart import Blueprint, websocket

from gateway.kernels.voice.session import Opening, TurnDetection
from gateway.kernels.voice.vad import Classifier, webrtc_classifier
from gateway.platform.apidoc import operation
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import Choices, Doc
from gateway.realtime.config import PCM_RATES, parse_format
from gateway.realtime.events import Dialect, RealtimeError, Wire
from gateway.realtime.handshake import chosen_subprotocol, credential, wants_beta
from gateway.realtime.legacy import LEGACY_FORMATS, LegacyWire, input_format
from gateway.realtime.native import NativeRelays, Relay
from gateway.realtime.services import RealtimeServices
from gateway.realtime.session import RealtimeSession

REALTIME_PATH = "/v1/realtime"
SESSIONS_PATH = "/v1/audio/sessions"
DEFAULT_SESSION_TEMPLATE = "voice-agent-fast"
# Said by both routes: a plain GET without the WebSocket upgrade is 426; a session that
# cannot start closes with 4000 + the status it would have had.
SOCKET_ERRORS = {404: ("model_not_found", "template_not_found"), 426: "upgrade_required"}


@attrs.frozen(kw_only=True)
class RealtimeQuery:
    """What a Realtime session is answered by."""

    model: Annotated[
        str | None, Doc("A realtime model id (`gpt-realtime`...) or a pipeline template")
    ] = None
    intent: Annotated[
        Literal["transcription"] | None, Doc("`transcription` for a transcription session")
    ] = None


@attrs.frozen(kw_only=True)
class SessionQuery:
    """A voice session's pipeline and its input audio."""

    template: Annotated[
        str | None, Doc(f"A template id or name (default `{DEFAULT_SESSION_TEMPLATE}`)")
    ] = None
    context: Annotated[str | None, Doc("Added to the template's system prompt")] = None
    input_audio_format: (
        Annotated[str, Choices(tuple(LEGACY_FORMATS)), Doc("Default pcm16")] | None
    ) = None
    sample_rate: Annotated[int, Choices(PCM_RATES), Doc("PCM16's rate, default 16000")] | None = (
        None
    )


def realtime_blueprint(services: RealtimeServices) -> Blueprint:
    bp = Blueprint("realtime", __name__)
    _realtime_route(bp, services)
    _sessions_route(bp, services)
    return bp


def _realtime_route(bp: Blueprint, services: RealtimeServices) -> None:
    """`GET /v1/realtime`: the OpenAI Realtime protocol, relayed natively or served by a cascade."""
    planner, relays = services.planner, services.relays

    @bp.websocket(REALTIME_PATH)
    @operation(
        "A Realtime session: the OpenAI Realtime protocol over a WebSocket, answered by a cascade",
        "realtime",
        query=RealtimeQuery,
        body=None,
        answer=None,
        status=101,
        errors=SOCKET_ERRORS,
        description="The OpenAI Realtime protocol (GA event names; the beta names with "
        "`OpenAI-Beta: realtime=v1`), the key in `Authorization: Bearer` or the "
        "`openai-insecure-api-key.<key>` subprotocol. Speech-to-text, the language model and "
        "text-to-speech of a pipeline template, each through the engine; see "
        "docs/realtime.md. A session that cannot start sends one `error` event and closes "
        "with 4000 + the HTTP status.",
    )
    async def realtime() -> None:
        """A Realtime session: `?model=`, `?intent=`, the key in `Authorization` or the
        `openai-insecure-api-key.<key>` subprotocol."""
        subprotocols = list(websocket.requested_subprotocols)
        headers = cast(Mapping[str, str], websocket.headers)
        dialect = Dialect(beta=wants_beta(headers, subprotocols))

        async def opening() -> Opening | Relay:
            authorization = credential(headers.get("authorization"), subprotocols)
            principal = await services.auth.header(authorization, websocket.remote_addr)
            model, intent = websocket.args.get("model"), websocket.args.get("intent")
            relay = relays.relay_for(principal, headers, model, intent, beta=dialect.beta)
            if relay is not None:
                await relays.admit_session(relay)
                return relay
            return await planner.realtime(principal, headers, model, intent)

        subprotocol = chosen_subprotocol(subprotocols)
        await _serve(services, dialect, opening, subprotocol, relays=relays)


def _sessions_route(bp: Blueprint, services: RealtimeServices) -> None:
    """`GET /v1/audio/sessions`: the first live voice protocol, served by a cascade."""
    planner, relays = services.planner, services.relays

    @bp.websocket(SESSIONS_PATH)
    @operation(
        "A live voice session: upgrade to a WebSocket (JSON events, PCM16 audio both ways)",
        "pipelines",
        query=SessionQuery,
        body=None,
        answer=None,
        status=101,
        errors=SOCKET_ERRORS,
        description="The same session core as `GET /v1/realtime` (docs/realtime.md), in this "
        "endpoint's protocol. Client events: `session.update`, `input_audio_buffer.append` "
        "(base64 PCM16 mono at the session's rate), `input_audio_buffer.commit`, "
        "`input_audio_buffer.clear`, `response.cancel`. Gateway events: `session.created`, "
        "`input_audio_buffer.speech_started`, `speech_stopped`, `committed`, "
        "`transcription.partial`/`final`, `response.created`, `response.text.delta`, "
        "`response.audio.delta` (PCM16 24 kHz), `response.done`, `error`. A session that "
        "cannot start sends one `error` event and closes with 4000 + the HTTP status "
        "(4401, 4404, 4429).",
    )
    async def sessions() -> None:
        """A voice session in the first protocol: `?template=` and `?context=` choose its
        pipeline (`session.update` may change it), `?input_audio_format=` and
        `?sample_rate=` what its audio is (PCM16 at 16 kHz by default)."""

        async def opening() -> Opening:
            headers = cast(Mapping[str, str], websocket.headers)
            principal = await services.auth.header(
                headers.get("authorization"), websocket.remote_addr
            )
            args = websocket.args
            try:
                fmt = input_format(args.get("input_audio_format"), args.get("sample_rate"))
                audio = parse_format(fmt, "sample_rate")
            except RealtimeError as error:
                raise invalid_request(error.message, param="sample_rate") from None
            template = args.get("template") or DEFAULT_SESSION_TEMPLATE
            context = args.get("context") or None
            return await planner.legacy(principal, headers, template, context, audio)

        await _serve(services, LegacyWire(), opening, None, relays=relays, legacy=True)


async def _serve(
    services: RealtimeServices,
    wire: Wire,
    opening: Callable[[], Awaitable[Opening | Relay]],
    subprotocol: str | None,
    *,
    relays: NativeRelays,
    legacy: bool = False,
) -> None:
    try:
        opened = await opening()
    except ApiError as error:
        await websocket.accept(subprotocol=subprotocol)
        await _refuse(wire, error)
        return
    if isinstance(opened, Relay):
        await _relay(relays, opened, wire, subprotocol)
        return
    session = RealtimeSession(
        _QuartSocket(),
        wire,
        opened.config,
        opened.cascade,
        opened.replan,
        classifier_for=_classifier,
        lead_s=services.settings.realtime_audio_lead_s,
        respond_on_commit=legacy,
        retemplate=opened.retemplate,
    )
    await websocket.accept(subprotocol=subprotocol)
    await session.run()


async def _refuse(wire: Wire, error: ApiError) -> None:
    """Tell an accepted client why its session cannot go on, and close (4000 + status)."""
    body = error.body()["error"]
    message = wire.render({"type": "error", "error": body | {"event_id": None}})
    await websocket.send((message or b"").decode())
    await websocket.close(4000 + error.status, error.code)


async def _relay(relays: NativeRelays, relay: Relay, wire: Wire, subprotocol: str | None) -> None:
    """A native session (`gateway.realtime.native`): refused before the client is
    accepted when no upstream opens, then carried until one side leaves."""
    accepted = False
    try:
        async with relays.upstream(relay) as stream:
            await websocket.accept(subprotocol=subprotocol)
            accepted = True
            await relays.carry(relay, _QuartSocket(), stream)
    except ApiError as error:
        if not accepted:
            await websocket.accept(subprotocol=subprotocol)
        await _refuse(wire, error)


def _classifier(vad: TurnDetection) -> Classifier:
    """WebRTC's VAD, its aggressiveness from the session's threshold (0-1)."""
    return webrtc_classifier(min(3, max(0, round(vad.threshold * 4) - 1)))


class _QuartSocket:
    """The request's WebSocket as a session's `Socket` (a dropped connection cancels the
    handler, and with it the session)."""

    async def receive(self) -> str | bytes:
        return await websocket.receive()

    async def send(self, data: str) -> None:
        await websocket.send(data)
