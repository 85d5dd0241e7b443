"""The simulated Anthropic Messages API (`POST /v1/messages`, `GET /v1/models`).

Speaks the wire protocol of API version 2023-06-01 closely enough for the official SDK:
`x-api-key` (or bearer) authentication, `max_tokens` required, content blocks, `tool_use`
answers, named SSE events (`message_start` ... `message_stop`, with `ping`), and error
bodies `{"type": "error", "error": {"type", "message"}, "request_id"}`. Text, token counts,
tool arguments and pacing come from `providers.sim.content` through the `SimContext`, so
the answer matches every other simulated vendor's for the same question.

The prompt is every text of the conversation (system first) joined by newlines, as the
OpenAI simulator reads it. Since Anthropic makes `max_tokens` mandatory, it is a cap here,
not a length: the reply is the context's deterministic text of its natural length (what an
OpenAI client gets without `max_tokens`), cut at `max_tokens` (`stop_reason`
`max_tokens`) or before the first of `stop_sequences` (`stop_sequence`). The model calls
a tool when tools are given and the last message is the user's own words (not a
`tool_result`), or when `tool_choice` forces it. As in the OpenAI simulator, a model whose
id starts with `unknown` does not exist (404), a whole answer takes as long as its stream
would, and a prompt over 200,000 tokens is refused ("prompt is too long").

Fault conventions (a `Fault` from `POST /_sim/faults` or the `x-sim-fault` header):

- `delay_ms`: wait that long before answering;
- `status` (without `stop_after_chunks`, or on a non-streamed call): answer with that
  HTTP status and Anthropic's error body; the type follows the status (400
  invalid_request_error, 401 authentication_error, 403 permission_error, 404
  not_found_error, 413 request_too_large, 429 rate_limit_error with `retry-after: 1`,
  500 api_error, 529 overloaded_error), or `code` when `code` names an Anthropic type;
- `stop_after_chunks` alone: the connection drops after that many content chunks (or
  stalls `stall_ms`, then goes on), streamed or not (a whole answer is paced too);
- `stop_after_chunks` with `code` = `stream_error` (or an Anthropic error type), or with a
  `status`: after that many chunks the stream sends `event: error` (type from `code`,
  else from `status`, else `overloaded_error`, the usual mid-stream failure) and ends
  cleanly, as Anthropic does when an error happens after the 200 was sent; a non-streamed
  call gets that error as an HTTP answer at once (`stream_error`: 529).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

import attrs
import trio

from providers.sim import content
from providers.sim.anthropic_ask import Ask, Invalid, read_ask
from providers.sim.catalog_models import vendor_models
from providers.sim.core import (
    Fault,
    Route,
    SimContext,
    SimRequest,
    SimResponse,
    SimStream,
    StreamCut,
)
from providers.sim.faults import MODEL_LIST
from providers.types import ToolCall
from streams.sse import encode_event

VENDOR = "anthropic"
CONTEXT_LIMIT = 200_000
MODELS: tuple[tuple[str, str, str], ...] = (
    ("claude-opus-4-5-20251101", "Claude Opus 4.5", "2025-11-01T00:00:00Z"),
    ("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", "2025-09-29T00:00:00Z"),
    ("claude-haiku-4-5-20251001", "Claude Haiku 4.5", "2025-10-01T00:00:00Z"),
)
MODELS += tuple(
    (m.upstream_id, m.name, datetime.fromtimestamp(m.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    for m in vendor_models("anthropic")
    if m.upstream_id not in {model_id for model_id, _, _ in MODELS}
)
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_STATUS_OF_TYPE = {kind: status for status, kind in ERROR_TYPES.items()}
STREAM_ERROR_CODE = "stream_error"


# -- the answer, planned -------------------------------------------------------------------


@attrs.frozen
class Plan:
    """The whole answer, decided before the first byte is sent."""

    message_id: str
    text_tokens: tuple[str, ...]
    tool_call: ToolCall | None
    stop_reason: str
    stop_sequence: str | None
    input_tokens: int
    thinking: str | None = None  # the thinking block's text, when thinking is on

    @property
    def output_tokens(self) -> int:
        thought = content.count_tokens(self.thinking) if self.thinking else 0
        if self.tool_call is not None:
            return thought + content.count_tokens(self.tool_call.arguments)
        return thought + len(self.text_tokens)

    @property
    def main_index(self) -> int:
        """The content block index of the answer (after the thinking block, if any)."""
        return 1 if self.thinking else 0


def plan_answer(ask: Ask, natural: Sequence[str]) -> Plan:
    """What the model says to `ask`, given its natural reply `natural` (a token list).

    Raises `Invalid` for a prompt over the context window or a `tool_choice` naming a
    tool that is not in `tools`.
    """
    input_tokens = ask.input_tokens
    if input_tokens > CONTEXT_LIMIT:
        raise Invalid(f"prompt is too long: {input_tokens} tokens > {CONTEXT_LIMIT} maximum")
    call = _tool_call(ask)
    message_id = "msg_" + os.urandom(12).hex()
    thinking = "".join(content.reply_tokens("thinking:" + ask.prompt, 8)) if ask.thinks else None
    if call is not None:
        return Plan(message_id, (), call, "tool_use", None, input_tokens, thinking)
    tokens, matched = content.cut_at_stop(list(natural[: ask.max_tokens]), ask.stop_sequences)
    if matched is not None:
        reason = "stop_sequence"
    else:
        reason = "max_tokens" if len(natural) > ask.max_tokens else "end_turn"
    return Plan(message_id, tuple(tokens), None, reason, matched, input_tokens, thinking)


def _tool_call(ask: Ask) -> ToolCall | None:
    last_role = "user" if ask.last_is_user_words else "other"
    if not content.wants_tool_call(ask.tools, ask.tool_choice, last_role):
        return None
    function = content.pick_tool(ask.tools, ask.tool_choice, ask.prompt)
    if function is None:
        raise Invalid("tool_choice: the tool it names is not in tools")
    call = content.plan_tool_call(function, ask.prompt)
    return attrs.evolve(call, id="toolu_" + call.id.removeprefix("call_"))


def message_json(ask: Ask, plan: Plan) -> dict[str, Any]:
    """The non-streamed answer."""
    blocks: list[dict[str, Any]] = []
    if plan.thinking:
        blocks.append(_thinking_block(plan.thinking))
    if plan.text_tokens:
        blocks.append({"type": "text", "text": "".join(plan.text_tokens)})
    if plan.tool_call is not None:
        blocks.append(_tool_use_block(plan.tool_call, json.loads(plan.tool_call.arguments)))
    return {
        **_message_head(ask, plan),
        "content": blocks,
        "stop_reason": plan.stop_reason,
        "stop_sequence": plan.stop_sequence,
        "usage": {"input_tokens": plan.input_tokens, "output_tokens": plan.output_tokens},
    }


def _thinking_block(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "sig_" + content.tool_call_id(text)}


def _thinking_events(text: str) -> list[bytes]:
    """The thinking block of a stream (index 0): its text, then its signature."""
    opening = {"type": "thinking", "thinking": "", "signature": ""}
    signature = _thinking_block(text)["signature"]
    return [
        sse({"type": "content_block_start", "index": 0, "content_block": opening}),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": text},
            }
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": signature},
            }
        ),
        sse({"type": "content_block_stop", "index": 0}),
    ]


def _message_head(ask: Ask, plan: Plan) -> dict[str, Any]:
    return {"id": plan.message_id, "type": "message", "role": "assistant", "model": ask.model}


def _tool_use_block(call: ToolCall, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}


# -- the stream ----------------------------------------------------------------------------


def sse(payload: dict[str, Any]) -> bytes:
    """One named event; its name is the payload's `type`, as Anthropic sends them."""
    return encode_event(str(payload["type"]), json.dumps(payload, separators=(",", ":")))


def stream_head(ask: Ask, plan: Plan) -> list[bytes]:
    start = {
        **_message_head(ask, plan),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": plan.input_tokens, "output_tokens": 1},
    }
    if plan.tool_call is not None:
        block = _tool_use_block(plan.tool_call, {})
    else:
        block = {"type": "text", "text": ""}
    thinking = _thinking_events(plan.thinking) if plan.thinking else []
    return [
        sse({"type": "message_start", "message": start}),
        *thinking,
        sse({"type": "content_block_start", "index": plan.main_index, "content_block": block}),
        sse({"type": "ping"}),
    ]


def stream_pieces(plan: Plan) -> list[str]:
    """What the stream's deltas carry: text tokens, or the tool arguments in fragments."""
    if plan.tool_call is not None:
        return content.fragments(plan.tool_call.arguments)
    return list(plan.text_tokens)


def delta_event(plan: Plan, pieces: list[str]) -> bytes:
    joined = "".join(pieces)
    if plan.tool_call is not None:
        delta = {"type": "input_json_delta", "partial_json": joined}
    else:
        delta = {"type": "text_delta", "text": joined}
    return sse({"type": "content_block_delta", "index": plan.main_index, "delta": delta})


def stream_tail(plan: Plan) -> list[bytes]:
    delta = {"stop_reason": plan.stop_reason, "stop_sequence": plan.stop_sequence}
    usage = {"input_tokens": plan.input_tokens, "output_tokens": plan.output_tokens}
    return [
        sse({"type": "content_block_stop", "index": plan.main_index}),
        sse({"type": "message_delta", "delta": delta, "usage": usage}),
        sse({"type": "message_stop"}),
    ]


def error_event(kind: str, message: str) -> bytes:
    return sse({"type": "error", "error": {"type": kind, "message": message}})


async def stream_body(
    ask: Ask, plan: Plan, context: SimContext, fault: Fault | None
) -> AsyncIterator[bytes]:
    """The SSE body, paced by the context; a fault may cut it or end it with an error."""
    for event in stream_head(ask, plan):
        yield event
    try:
        async with aclosing(context.pace(stream_pieces(plan), fault)) as groups:
            async for group in groups:
                yield delta_event(plan, group)
    except StreamCut:
        kind = stream_error_type(fault)
        if kind is None:
            raise
        default = "Overloaded" if kind == "overloaded_error" else f"simulated {kind}"
        yield error_event(kind, (fault and fault.message) or default)
        return
    for event in stream_tail(plan):
        yield event


def stream_error_type(fault: Fault | None) -> str | None:
    """The error type a fault sends mid-stream, or None when it just drops the line."""
    if fault is None or fault.stop_after_chunks is None:
        return None
    if fault.code in _STATUS_OF_TYPE:
        return fault.code
    if fault.status is not None:
        return error_type(fault.status)
    return "overloaded_error" if fault.code == STREAM_ERROR_CODE else None


# -- errors --------------------------------------------------------------------------------


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def error_response(status: int, message: str, kind: str | None = None) -> SimResponse:
    """An error answer with Anthropic's body and headers."""
    request_id = _request_id()
    body = {
        "type": "error",
        "error": {"type": kind or error_type(status), "message": message},
        "request_id": request_id,
    }
    headers = {"request-id": request_id}
    if status == 429:
        headers["retry-after"] = "1"
    return SimResponse.of_json(body, status=status, headers=headers)


def immediate_error(fault: Fault, stream: bool) -> SimResponse | None:
    """The HTTP error answer `fault` calls for now, if any.

    A mid-stream failure of a streamed call is sent later, as an `error` event; the same
    failure of a whole answer is an HTTP error, as Anthropic reports it.
    """
    mid_stream = stream_error_type(fault)
    if mid_stream is not None:
        if stream:
            return None
        status = fault.status or _STATUS_OF_TYPE[mid_stream]
        return error_response(status, fault.message or f"simulated {mid_stream}", mid_stream)
    if not fault.status:
        return None
    kind = fault.code if fault.code in _STATUS_OF_TYPE else None
    message = fault.message or f"simulated {kind or error_type(fault.status)}"
    return error_response(fault.status, message, kind)


# -- handlers ------------------------------------------------------------------------------


def _request_id() -> str:
    return "req_" + os.urandom(12).hex()


def _authenticated(request: SimRequest) -> bool:
    """A key in `x-api-key`, or as a bearer token, which recent official SDKs send."""
    if request.headers.get("x-api-key", "").strip():
        return True
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(key.strip())


async def create_message(request: SimRequest, context: SimContext) -> SimResponse | SimStream:
    """`POST /v1/messages`: validate, apply any fault, answer whole or streamed."""
    if not _authenticated(request):
        return error_response(401, "invalid x-api-key")
    try:
        ask = read_ask(_json(request))
    except Invalid as exc:
        return error_response(400, str(exc))
    if ask.model.startswith("unknown"):
        return error_response(404, f"model: {ask.model}")
    fault = context.fault(ask.model, VENDOR)
    if fault is not None and fault.delay_ms:
        await trio.sleep(fault.delay_ms / 1000)
    failed = immediate_error(fault, ask.stream) if fault is not None else None
    if failed is not None:
        return failed
    try:
        natural = context.reply_tokens(ask.prompt, None, ask.schema)
        plan = plan_answer(ask, content.received(ask.documents) + natural)
    except Invalid as exc:
        return error_response(400, str(exc))
    headers = {"request-id": _request_id()}
    if ask.stream:
        body = stream_body(ask, plan, context, fault)
        return SimStream(body, headers={**headers, "cache-control": "no-cache"})
    async with aclosing(context.pace(stream_pieces(plan) or [""], fault)) as groups:
        async for _ in groups:
            pass  # a whole answer takes as long as its stream would
    return SimResponse.of_json(message_json(ask, plan), headers=headers)


def _json(request: SimRequest) -> Any:
    try:
        return request.json()
    except ValueError:
        return None


def _model_json(model_id: str, name: str, created: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": model_id,
        "display_name": name,
        "created_at": created,
        "lifecycle": "active",
    }


async def list_models(request: SimRequest, context: SimContext) -> SimResponse:
    """`GET /v1/models`: one page holding every simulated model; obeys the faults naming
    `MODEL_LIST` (the gateway's probes)."""
    if not _authenticated(request):
        return error_response(401, "invalid x-api-key")
    fault = context.fault(MODEL_LIST, VENDOR)
    if fault is not None and fault.delay_ms:
        await trio.sleep(fault.delay_ms / 1000)
    failed = immediate_error(fault, stream=False) if fault is not None else None
    if failed is not None:
        return failed
    data = [_model_json(*model) for model in MODELS]
    return SimResponse.of_json(
        {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
    )


async def get_model(request: SimRequest, context: SimContext) -> SimResponse:
    """`GET /v1/models/{model_id}`."""
    if not _authenticated(request):
        return error_response(401, "invalid x-api-key")
    wanted = request.path_params.get("model_id", "")
    for model in MODELS:
        if model[0] == wanted:
            return SimResponse.of_json(_model_json(*model))
    return error_response(404, f"model: {wanted}")


ROUTES = [
    Route("POST", "/v1/messages", create_message),
    Route("GET", "/v1/models", list_models),
    Route("GET", "/v1/models/{model_id}", get_model),
]
