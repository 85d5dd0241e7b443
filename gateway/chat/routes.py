"""POST /v1/chat/completions, served by the plain-ASGI fast path (`gateway.platform.asgi`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from gateway.chat.service import serve_chat
from gateway.chat.services import ChatServices
from gateway.chat.shapes import ChatCompletion, ChatCompletionChunk, ChatCompletionRequest
from gateway.platform.apidoc import Content, Header, Operation
from gateway.platform.asgi import Route
from gateway.platform.auth import Principal
from gateway.platform.body import Answering
from gateway.platform.errors import ApiError
from gateway.platform.web import decode_json
from gateway.upstream.options import RoutingMode
from gateway.upstream.refusals import CHAT_CALL, merged

CHAT_PATH = "/v1/chat/completions"
SERVICE_HEADERS = (
    Header("X-Routing-Mode", "The routing mode, as `routing_mode`", values=get_args(RoutingMode)),
    Header("X-Service-Project", "A project id for the usage records"),
    Header("X-Service-Team", "A team id for the usage records"),
    Header("X-Service-Tags", "Comma-separated tags for the usage records"),
    Header("X-Service-Task-Type", "Overrides the task classification"),
    Header("X-Service-Trace-Id", "A trace id of the caller's"),
)
CHAT_OPERATION = Operation(
    summary="Chat completion (OpenAI-compatible), streamed or not",
    tag="chat",
    body=ChatCompletionRequest,
    answer=(ChatCompletion, Content("text/event-stream", ChatCompletionChunk)),
    headers=SERVICE_HEADERS,
    errors=merged(CHAT_CALL, {400: "invalid_tool_choice"}),
    description="With `stream: true`, server-sent events: `data: <chunk>` for each chunk, "
    "then `data: [DONE]`.",
)


def chat_routes(chat: ChatServices) -> list[Route]:
    def answer_chat(principal: Principal, body: bytes, headers: Mapping[str, str]) -> Answering:
        if not body:
            raise ApiError(
                400, "invalid_request", "The request body must be a JSON object.", param=None
            )
        return serve_chat(chat, principal, decode_json(body), headers)

    return [Route("POST", CHAT_PATH, answer_chat, operation=CHAT_OPERATION)]
