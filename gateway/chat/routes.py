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

CHAT_PATH = "/v1/chat/completions"
# What a model call can answer besides a malformed body: the request's meaning (a
# tool choice, the model's context and filters), the key's and the agent's rights and
# limits, and the providers' failures (docs/errors.md).
MODEL_CALL_ERRORS: Mapping[int, tuple[str, ...]] = {
    400: (
        "unsupported_parameter",
        "context_length_exceeded",
        "content_filter",
        "provider_not_configured",
    ),
    403: ("model_not_allowed", "agent_key_required", "agent_suspended"),
    404: ("model_not_found",),
    429: (
        "rate_limit_exceeded",
        "token_limit_exceeded",
        "concurrent_limit_exceeded",
        "daily_limit_exceeded",
        "monthly_limit_exceeded",
        "rpm_exceeded",
        "cost_limit_exceeded",
    ),
    502: ("provider_error", "invalid_model_output"),
    503: ("provider_unavailable", "model_overloaded", "limits_unavailable"),
    504: ("provider_timeout",),
}
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
    errors={**MODEL_CALL_ERRORS, 400: (*MODEL_CALL_ERRORS[400], "invalid_tool_choice")},
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
