"""Anthropic's Messages API on the fast path: `POST /v1/messages` (it streams) and `POST
/v1/messages/count_tokens`. Callers may send their key as `x-api-key` (Anthropic's
header) or as a bearer token; the `anthropic-version` and `anthropic-beta` headers are
accepted and change nothing. Every error, the refusals before the handler runs included,
is in Anthropic's shape."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from gateway.messages import shapes
from gateway.messages.render import error_body
from gateway.messages.service import count_tokens, serve_message
from gateway.messages.services import MessagesServices
from gateway.platform.apidoc import Content, Header, Operation
from gateway.platform.asgi import Route
from gateway.platform.auth import Principal
from gateway.platform.body import Answer, Answering
from gateway.platform.errors import invalid_request
from gateway.platform.jsonio import JsonAnswer
from gateway.platform.web import decode_json
from gateway.upstream.refusals import CHAT_CALL, MODEL, merged

MESSAGES_PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"
TAG = "messages"
# What this door refuses for what the fields mean (docs/errors.md).
DOOR_REFUSALS = ("invalid_tool_choice", "invalid_thinking_budget", "nothing_to_answer")
ANTHROPIC_HEADERS = (
    Header("x-api-key", "A gateway key, as Anthropic's SDK sends it (or Authorization)"),
    Header("anthropic-version", "Accepted; changes nothing"),
    Header("anthropic-beta", "Accepted; changes nothing"),
)
ANTHROPIC_NOTE = (
    "Errors on this route are in Anthropic's shape: `{type: 'error', error: {type, "
    "message, code, ...}, request_id}`."
)
CREATE_OPERATION = Operation(
    summary="Create a message (Anthropic's Messages API over any chat vendor), streamed or not",
    tag=TAG,
    body=shapes.CreateMessage,
    answer=(shapes.MessageObject, Content("text/event-stream", shapes.MessageEvent)),
    headers=ANTHROPIC_HEADERS,
    errors=merged(CHAT_CALL, {400: DOOR_REFUSALS}),
    description=ANTHROPIC_NOTE,
)
COUNT_OPERATION = Operation(
    summary="Count a Messages request's input tokens",
    tag=TAG,
    body=shapes.CountTokens,
    answer=shapes.TokenCount,
    headers=ANTHROPIC_HEADERS,
    errors=merged(MODEL, {400: DOOR_REFUSALS}),
    description=ANTHROPIC_NOTE,
)


def messages_routes(messages: MessagesServices) -> list[Route]:
    def answer_message(principal: Principal, body: bytes, headers: Mapping[str, str]) -> Answering:
        return serve_message(messages, principal, _decoded(body), headers)

    @asynccontextmanager
    async def answer_count(
        principal: Principal, body: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[Answer]:
        yield JsonAnswer(200, dict(count_tokens(messages, principal, _decoded(body))), {})

    return [
        Route(
            "POST",
            path,
            handler,
            error_body=error_body,
            credential=anthropic_credential,
            operation=declared,
        )
        for path, handler, declared in (
            (MESSAGES_PATH, answer_message, CREATE_OPERATION),
            (COUNT_PATH, answer_count, COUNT_OPERATION),
        )
    ]


def anthropic_credential(headers: Mapping[str, str]) -> str | None:
    """The key as an `Authorization` value: the bearer header, else `x-api-key`."""
    if headers.get("authorization"):
        return headers["authorization"]
    key = headers.get("x-api-key")
    return f"Bearer {key}" if key else None


def _decoded(body: bytes) -> object:
    if not body:
        raise invalid_request("The request body must be a JSON object.")
    return decode_json(body)
