"""POST /v1/chat/completions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.chat.service import JsonAnswer, serve_chat
from gateway.state import AppState
from gateway.web import authenticate, json_response, read_json


def chat_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("chat", __name__)

    @bp.post("/v1/chat/completions")
    async def chat_completions() -> Response:
        principal = await authenticate(state)
        body = await read_json()
        headers = cast(Mapping[str, str], request.headers)  # case-insensitive lookups
        answer = await serve_chat(state, principal, body, headers)
        if isinstance(answer, JsonAnswer):
            return json_response(answer.body, answer.status, answer.headers)
        response = Response(
            answer.body,
            status=200,
            headers=answer.headers,
            content_type="text/event-stream",
        )
        response.timeout = None  # long streams are not cut (Quart's default is 60 s)
        return response

    return bp
