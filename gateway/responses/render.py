"""The Responses API's objects: a response, its output items, its usage (pure).

A canonical answer becomes a response whose `output` is a `message` item (the text, as
one `output_text` part) and a `function_call` item per tool call. Its `status` follows the
finish reason: `completed`, or `incomplete` with `incomplete_details.reason`
(`max_output_tokens` for a cut answer, `content_filter` for a refused one). The fields the
request set are repeated as the API does; the gateway's metadata (`service`, `_gateway`)
rides beside them, where the official clients ignore unknown fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.kernels.dialects import Answered
from gateway.platform.errors import ApiError
from gateway.responses.input import ResponsesRequest
from gateway.responses.items import new_item_id
from gateway.upstream.accounting import Accounting
from providers.types import ChatResult, TokenLogprob

INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def response_id(answered: Answered) -> str:
    """The response's id: the request's id (its `X-Request-ID` and usage record), so one
    id names the answer everywhere."""
    return "resp_" + answered.request_id.replace("-", "")


def status_of(finish_reason: str) -> tuple[str, dict[str, str] | None]:
    """The response status and `incomplete_details` for a canonical finish reason."""
    reason = INCOMPLETE_REASONS.get(finish_reason)
    if reason is None:
        return "completed", None
    return "incomplete", {"reason": reason}


def response_object(
    request: ResponsesRequest,
    answered: Answered,
    *,
    status: str,
    output: Sequence[Mapping[str, Any]],
    accounting: Accounting | None = None,
    incomplete: dict[str, str] | None = None,
    error: ApiError | None = None,
) -> dict[str, Any]:
    """The response object, `in_progress` (no usage yet) or finished."""
    body: dict[str, Any] = {
        "id": response_id(answered),
        "object": "response",
        "created_at": answered.created,
        "status": status,
        "background": False,
        "error": None if error is None else {"code": error.code, "message": error.message},
        "incomplete_details": incomplete,
        **request.echo,
        "model": answered.model,
        "output": list(output),
        "usage": None if accounting is None else usage_object(accounting),
    }
    if accounting is not None:
        tools = [item["name"] for item in output if item["type"] == "function_call"]
        body.update(answered.metadata(accounting, tools))
    return body


def usage_object(accounting: Accounting) -> dict[str, Any]:
    usage = accounting.usage
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def whole(
    request: ResponsesRequest, answered: Answered, result: ChatResult, accounting: Accounting
) -> dict[str, Any]:
    """A whole answer as a finished response."""
    status, incomplete = status_of(result.finish_reason)
    output: list[dict[str, Any]] = []
    if result.content or not result.tool_calls:
        text, logprobs = result.content or "", token_logprobs(result.logprobs)
        output.append(message_item(new_item_id("msg"), text, item_status(status), logprobs))
    for call in result.tool_calls:
        output.append(function_call_item(new_item_id("fc"), call.id, call.name, call.arguments))
    return response_object(
        request,
        answered,
        status=status,
        output=output,
        accounting=accounting,
        incomplete=incomplete,
    )


def item_status(response_status: str) -> str:
    return "incomplete" if response_status == "incomplete" else "completed"


def text_part(text: str, logprobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs or []}


def token_logprobs(entries: Sequence[TokenLogprob] | None) -> list[dict[str, Any]]:
    """Chat's log probabilities (`logprobs.content`) in this API's shape: each token's
    `token`, `bytes`, `logprob` and `top_logprobs` (empty when none were asked)."""
    return [
        {**_token(entry), "top_logprobs": [_token(top) for top in entry.get("top_logprobs") or ()]}
        for entry in entries or ()
    ]


def _token(entry: TokenLogprob) -> dict[str, Any]:
    return {
        "token": entry.get("token", ""),
        "bytes": list(entry.get("bytes") or ()),
        "logprob": entry.get("logprob", 0.0),
    }


def message_item(
    item_id: str, text: str | None, status: str, logprobs: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An assistant message item; `text` None while it is being streamed (no part yet)."""
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [] if text is None else [text_part(text, logprobs)],
    }


def function_call_item(
    item_id: str, call_id: str, name: str, arguments: str, status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }
