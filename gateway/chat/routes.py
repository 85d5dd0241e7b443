"""POST /v1/chat/completions, served by the plain-ASGI fast path (`gateway.platform.asgi`)."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.chat.service import serve_chat
from gateway.chat.services import ChatServices
from gateway.platform.asgi import Route
from gateway.platform.auth import Principal
from gateway.platform.body import Answering
from gateway.platform.errors import ApiError
from gateway.platform.web import decode_json

CHAT_PATH = "/v1/chat/completions"


def chat_routes(chat: ChatServices) -> list[Route]:
    def answer_chat(principal: Principal, body: bytes, headers: Mapping[str, str]) -> Answering:
        if not body:
            raise ApiError(
                400, "invalid_request", "The request body must be a JSON object.", param=None
            )
        return serve_chat(chat, principal, decode_json(body), headers)

    return [Route("POST", CHAT_PATH, answer_chat)]
