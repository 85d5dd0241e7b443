"""`GET /v1/realtime` (WebSocket): the OpenAI Realtime protocol over the gateway's
cascade (`gateway.realtime`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import cast

from quart import Blueprint, websocket

from gateway.pipelines.vad import Classifier, webrtc_classifier
from gateway.platform.errors import ApiError
from gateway.platform.state import AppState
from gateway.realtime.cascade import Caller, Cascade, plan_cascade
from gateway.realtime.config import SessionConfig, TurnDetection
from gateway.realtime.events import Dialect
from gateway.realtime.service import (
    chosen_subprotocol,
    credential,
    open_session,
    wants_beta,
)
from gateway.realtime.session import RealtimeSession

REALTIME_PATH = "/v1/realtime"


def realtime_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("realtime", __name__)

    @bp.websocket(REALTIME_PATH)
    async def realtime() -> None:
        """A Realtime session. One that cannot start is accepted, told why in an `error`
        event and closed with 4000 + the HTTP status it would have had: browsers cannot
        read an HTTP answer to a WebSocket handshake."""
        subprotocols = list(websocket.requested_subprotocols)
        headers = cast(Mapping[str, str], websocket.headers)
        accept = partial(websocket.accept, subprotocol=chosen_subprotocol(subprotocols))
        dialect = Dialect(beta=wants_beta(headers, subprotocols))
        try:
            session = await _open(state, headers, subprotocols, dialect)
        except ApiError as error:
            await accept()
            body = error.body()["error"] | {"event_id": None}
            message = dialect.render({"type": "error", "error": body})
            await websocket.send((message or b"").decode())
            await websocket.close(4000 + error.status, error.code)
            return
        await accept()
        await session.run()

    return bp


async def _open(
    state: AppState, headers: Mapping[str, str], subprotocols: list[str], dialect: Dialect
) -> RealtimeSession:
    authorization = credential(headers.get("authorization"), subprotocols)
    principal = await state.auth.header(authorization, websocket.remote_addr)
    caller = Caller(state, principal, headers)
    opening = await open_session(caller, websocket.args.get("model"), websocket.args.get("intent"))

    async def replan(config: SessionConfig) -> Cascade:
        return await plan_cascade(caller, opening.base, config)

    return RealtimeSession(
        _QuartSocket(),
        dialect,
        opening.config,
        opening.cascade,
        replan,
        classifier_for=_classifier,
        lead_s=state.settings.realtime_audio_lead_s,
    )


def _classifier(vad: TurnDetection) -> Classifier:
    """WebRTC's VAD, its aggressiveness from the session's threshold (0-1)."""
    return webrtc_classifier(min(3, max(0, round(vad.threshold * 4) - 1)))


class _QuartSocket:
    """The request's WebSocket as a session's `Socket`."""

    async def receive(self) -> str | bytes:
        return await websocket.receive()  # a dropped connection cancels the handler

    async def send(self, data: str) -> None:
        await websocket.send(data)
