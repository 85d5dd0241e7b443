"""Anthropic's Messages API shapes: a message, its stream, its errors (pure).

A canonical answer becomes a `message` whose content is a `text` block and a `tool_use`
block per call (the call's JSON arguments as its `input` object). Stop reasons:
`end_turn` (a finished answer, or one ended by a stop sequence: the canonical answer does
not say which sequence matched, so `stop_sequence` is null), `max_tokens`, `tool_use`,
`refusal` (content filtered).

The stream (`MessageEvents`) is the documented sequence: `message_start`, `ping`, per
block `content_block_start`, `content_block_delta` (`text_delta`, `input_json_delta`)
..., `content_block_stop`, then `message_delta` (stop reason, usage) and
`message_stop`; a failure after the first chunk is one `error` event. Which block opens
and closes when is `gateway.kernels.blocks`' table. The gateway's metadata (`service`,
`_gateway`) rides in the message (and in `message_delta`), which the SDK ignores.

Every error on these routes has Anthropic's shape, `{"type": "error", "error": {type,
message}, "request_id"}`, with the gateway's code and fields beside `type` and `message`;
the status is the gateway's, which is what the official SDK picks its exception by.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from gateway.kernels.blocks import Block, BlockEvent, BlockSequencer, Step
from gateway.kernels.dialects import Answered
from gateway.kernels.splice import Splice
from gateway.messages.shapes import MessageObject, MessageUsage
from gateway.platform.errors import ApiError
from gateway.platform.jsonio import dumps
from gateway.upstream.accounting import Accounting
from providers.types import ChatChunk, ChatResult
from streams.sse import encode_event

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def message_id(answered: Answered) -> str:
    return "msg_" + answered.request_id.replace("-", "")


def stop_reason(finish_reason: str) -> str:
    return STOP_REASONS.get(finish_reason, "end_turn")


def message_body(answered: Answered, result: ChatResult, accounting: Accounting) -> MessageObject:
    content: list[dict[str, Any]] = []
    if result.content:
        content.append({"type": "text", "text": result.content})
    for call in result.tool_calls:
        content.append(tool_use_block(call.id, call.name, _arguments(call.arguments)))
    body = {
        **_head(answered),
        "content": content,
        "stop_reason": stop_reason(result.finish_reason),
        "stop_sequence": None,
        "usage": usage_object(accounting),
        **answered.metadata(accounting, [call.name for call in result.tool_calls]),
    }
    return cast(MessageObject, body)  # with the gateway's metadata spread in


def _head(answered: Answered) -> dict[str, Any]:
    return {
        "id": message_id(answered),
        "type": "message",
        "role": "assistant",
        "model": answered.model,
    }


def tool_use_block(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _arguments(text: str) -> Any:
    """A call's JSON arguments as the object Anthropic's `input` is (`{}` when the model
    gave none, or text that is not an object)."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def usage_object(accounting: Accounting) -> MessageUsage:
    usage = accounting.usage
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def error_body(error: ApiError) -> dict[str, Any]:
    """`error` in Anthropic's shape (see the module docstring)."""
    fields = error.body()["error"]
    kind = ERROR_TYPES.get(error.status) or (
        "api_error" if error.status >= 500 else "invalid_request_error"
    )
    detail = {key: value for key, value in fields.items() if key not in ("type", "message")}
    return {
        "type": "error",
        "error": {"type": kind, "message": error.message, **detail},
        "request_id": error.headers.get("X-Request-ID"),
    }


def sse(payload: dict[str, Any]) -> bytes:
    return encode_event(str(payload["type"]), dumps(payload))


PING = sse({"type": "ping"})
MESSAGE_STOP = sse({"type": "message_stop"})
TEXT_DELTA, JSON_DELTA = ("text_delta", "text"), ("input_json_delta", "partial_json")


def delta_splice(index: int, kind: tuple[str, str]) -> Splice:
    """The `content_block_delta` event of block `index` (`kind`: the delta's type and the
    field its text goes in), cut where the text goes."""
    delta_type, field = kind
    return Splice.around(
        lambda text: sse(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": delta_type, field: text},
            }
        )
    )


class MessageEvents:
    """The events of one streamed message; see the module docstring.

    A block's deltas are rendered from bytes made when it opens (`delta_splice`): each is
    its text's JSON string spliced in, and a chunk that only continues the open text
    block is rendered without the block table's step objects."""

    content_type = "text/event-stream"

    def __init__(self, answered: Answered) -> None:
        self._answered = answered
        self._blocks = BlockSequencer()
        self._index = -1
        self._delta: Splice | None = None  # the open block's deltas

    def opening(self) -> bytes:
        start = {
            **_head(self._answered),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self._answered.prompt_tokens,
                "output_tokens": 0,
            },
        }
        return sse({"type": "message_start", "message": start}) + PING

    def chunk(self, chunk: ChatChunk) -> bytes:
        text = self._blocks.continued_text(chunk)
        if text and self._delta is not None:  # most chunks: a piece of the open text
            return self._delta.render(text)
        return b"".join([self._step(event) for event in self._blocks.feed(chunk)])

    def text(self, text: str) -> bytes:
        if text and self._delta is not None and self._blocks.state is Block.TEXT:
            return self._delta.render(text)  # a piece of the open text, as `chunk` does
        return self.chunk(ChatChunk(text))

    def finish(
        self, finish_reason: str, accounting: Accounting, tools_called: Sequence[str]
    ) -> bytes:
        frames = b"".join([self._step(event) for event in self._blocks.close()])
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(finish_reason), "stop_sequence": None},
            "usage": usage_object(accounting),
            **self._answered.metadata(accounting, tools_called),
        }
        return frames + sse(delta) + MESSAGE_STOP

    def fail(self, error: ApiError) -> bytes:
        body = error_body(error)
        return sse({"type": "error", "error": body["error"]})

    async def seal(self) -> None:
        return None

    def _step(self, event: BlockEvent) -> bytes:
        step = event.step
        if step in (Step.OPEN_TEXT, Step.OPEN_CALL):
            return self._open(event)
        if step in (Step.TEXT, Step.ARGS):
            return self._piece(event)
        self._delta = None
        return sse({"type": "content_block_stop", "index": self._index})

    def _open(self, event: BlockEvent) -> bytes:
        self._index += 1
        block: dict[str, Any] = {"type": "text", "text": ""}
        kind = TEXT_DELTA
        if event.call is not None:
            block = tool_use_block(
                event.call.id or f"toolu_{self._index}", event.call.name or "", {}
            )
            kind = JSON_DELTA
        self._delta = delta_splice(self._index, kind)
        return sse({"type": "content_block_start", "index": self._index, "content_block": block})

    def _piece(self, event: BlockEvent) -> bytes:
        """A text delta or a call's arguments delta of the open block (none when empty)."""
        text = event.text if event.step is Step.TEXT else event.call and event.call.arguments
        if not text or self._delta is None:
            return b""
        return self._delta.render(text)
