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
from typing import cast

from quart import Blueprint, websocket

from gateway.kernels.voice.session import Opening, TurnDetection
from gateway.kernels.voice.vad import Classifier, webrtc_classifier
from gateway.platform.errors import ApiError, invalid_request
from gateway.realtime.config import parse_format
from gateway.realtime.events import Dialect, RealtimeError, Wire
from gateway.realtime.handshake import chosen_subprotocol, credential, wants_beta
from gateway.realtime.legacy import LegacyWire, input_format
from gateway.realtime.native import NativeRelays, Relay
from gateway.realtime.services import RealtimeServices
from gateway.realtime.session import RealtimeSession

REALTIME_PATH = "/v1/realtime"
SESSIONS_PATH = "/v1/audio/sessions"
DEFAULT_SESSION_TEMPLATE = "voice-agent-fast"


def realtime_blueprint(services: RealtimeServices) -> Blueprint:
    bp = Blueprint("realtime", __name__)
    planner, relays = services.planner, services.relays

    @bp.websocket(REALTIME_PATH)
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

    @bp.websocket(SESSIONS_PATH)
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

    return bp


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
