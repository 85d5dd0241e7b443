"""Anthropic's answers in canonical terms: whole messages and the phases of a stream."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from typing import Any

from providers.anthropic.errors import STATUS_OF_TYPE, map_error_object
from providers.errors import (
    StreamInterrupted,
    UpstreamHTTPError,
)
from providers.types import (
    ChatChunk,
    ChatResult,
    ToolCall,
    ToolCallDelta,
    Usage,
)

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def finish_reason(stop_reason: str | None) -> str:
    """Anthropic's `stop_reason` as a chat-completions finish reason (unknown: `stop`)."""
    return _FINISH_REASONS.get(stop_reason or "", "stop")


def parse_usage(data: Mapping[str, Any] | None) -> Usage:
    if not data:
        return Usage()
    return Usage(int(data.get("input_tokens") or 0), int(data.get("output_tokens") or 0))


def parse_message(data: Mapping[str, Any]) -> ChatResult:
    """A Messages API JSON answer as a `ChatResult`: text blocks joined, tool_use as calls."""
    blocks = data.get("content") or ()
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    calls = tuple(
        ToolCall(id=b.get("id", ""), name=b.get("name", ""), arguments=json.dumps(b["input"]))
        for b in blocks
        if b.get("type") == "tool_use"
    )
    return ChatResult(
        id=data.get("id", ""),
        model=data.get("model", ""),
        content="".join(texts) if texts else None,
        finish_reason=finish_reason(data.get("stop_reason")),
        usage=parse_usage(data.get("usage")),
        tool_calls=calls,
    )


class Phase(enum.Enum):
    """Where a Messages stream stands."""

    AWAITING_START = "awaiting_start"
    STREAMING = "streaming"
    STOPPED = "stopped"


# Which event types each phase accepts; anything else in that phase is a protocol fault.
# Unknown event types are skipped in STREAMING: Anthropic may add new ones at any time.
_ACCEPTED: Mapping[Phase, frozenset[str] | None] = {
    Phase.AWAITING_START: frozenset({"message_start", "ping", "error"}),
    Phase.STREAMING: None,  # everything
    Phase.STOPPED: frozenset(),
}
_NEXT_PHASE: Mapping[tuple[Phase, str], Phase] = {
    (Phase.AWAITING_START, "message_start"): Phase.STREAMING,
    (Phase.STREAMING, "message_stop"): Phase.STOPPED,
}


class AnthropicStreamTranslator:
    """Turns decoded Messages stream events into canonical chunks, one event at a time.

    Pure and I/O-free: feed each event's JSON (`feed`), then call `finish` at the end of
    the transfer, which raises `StreamInterrupted` unless `message_stop` was seen. Tool
    calls are numbered by their order among tool_use blocks (0, 1, ...), not by content
    block index, since canonical deltas index tool calls.
    """

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.phase = Phase.AWAITING_START
        self._input_tokens = 0
        self._tool_ordinal: dict[int, int] = {}
        self._handlers: Mapping[str, Callable[[Mapping[str, Any]], list[ChatChunk]]] = {
            "message_start": self._message_start,
            "content_block_start": self._block_start,
            "content_block_delta": self._block_delta,
            "message_delta": self._message_delta,
            "error": self._error,
        }

    @property
    def done(self) -> bool:
        return self.phase is Phase.STOPPED

    def feed(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        """The chunks event `event` (its decoded `data`) yields; raises on an `error` event."""
        kind = str(event.get("type", ""))
        accepted = _ACCEPTED[self.phase]
        if accepted is not None and kind not in accepted:
            raise UpstreamHTTPError(
                self.provider,
                f"unexpected {kind or 'untyped'} event while {self.phase.value}",
                status=502,
            )
        self.phase = _NEXT_PHASE.get((self.phase, kind), self.phase)
        handler = self._handlers.get(kind)
        return handler(event) if handler else []

    def finish(self) -> None:
        """The transfer ended: anything short of `message_stop` is an interrupted stream."""
        if self.phase is not Phase.STOPPED:
            raise StreamInterrupted(self.provider, "the upstream stream ended before message_stop")

    def _message_start(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        usage = (event.get("message") or {}).get("usage") or {}
        self._input_tokens = int(usage.get("input_tokens") or 0)
        return []

    def _block_start(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        block = event.get("content_block") or {}
        if block.get("type") == "text" and block.get("text"):
            return [ChatChunk(content=block["text"])]
        if block.get("type") != "tool_use":
            return []
        ordinal = self._tool_ordinal.setdefault(int(event.get("index", 0)), len(self._tool_ordinal))
        delta = ToolCallDelta(index=ordinal, id=block.get("id"), name=block.get("name"))
        return [ChatChunk(tool_calls=(delta,))]

    def _block_delta(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        delta = event.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [ChatChunk(content=delta["text"])]
        ordinal = self._tool_ordinal.get(int(event.get("index", 0)))
        if kind == "input_json_delta" and delta.get("partial_json") and ordinal is not None:
            piece = ToolCallDelta(index=ordinal, arguments=delta["partial_json"])
            return [ChatChunk(tool_calls=(piece,))]
        return []  # thinking, signature and citation deltas have no canonical form

    def _message_delta(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        stop_reason = (event.get("delta") or {}).get("stop_reason")
        usage = event.get("usage") or {}
        # message_delta usage is cumulative; input tokens appear there only sometimes.
        prompt = int(usage.get("input_tokens") or self._input_tokens)
        counted = Usage(prompt, int(usage.get("output_tokens") or 0)) if usage else None
        finish = finish_reason(stop_reason) if stop_reason else None
        if finish is None and counted is None:
            return []
        return [ChatChunk(finish_reason=finish, usage=counted)]

    def _error(self, event: Mapping[str, Any]) -> list[ChatChunk]:
        error = event.get("error") or {}
        kind = str(error.get("type") or "api_error")
        raise map_error_object(self.provider, STATUS_OF_TYPE.get(kind, 500), error, {}, self.model)
