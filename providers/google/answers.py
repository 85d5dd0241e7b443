"""Gemini's answers in canonical terms: whole responses, stream events, vectors, models."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from providers.errors import (
    ContentFiltered,
    StreamInterrupted,
)
from providers.google.errors import stream_error
from providers.types import (
    ChatChunk,
    ChatResult,
    ToolCall,
    ToolCallDelta,
    Usage,
)

FINISH_REASONS: Mapping[str, str] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}
"""Gemini finish reasons with a canonical counterpart; any other one (OTHER,
MALFORMED_FUNCTION_CALL, LANGUAGE, ...) ends the answer as `stop`."""


def parse_usage(data: Mapping[str, Any] | None) -> Usage:
    """`usageMetadata` as canonical usage; thinking tokens are billed as output, so they
    count as completion tokens."""
    if not data:
        return Usage()
    completion = int(data.get("candidatesTokenCount") or 0)
    completion += int(data.get("thoughtsTokenCount") or 0)
    return Usage(int(data.get("promptTokenCount") or 0), completion)


def map_finish_reason(reason: str | None, has_calls: bool) -> str:
    canonical = FINISH_REASONS.get(reason or "STOP", "stop")
    return "tool_calls" if has_calls and canonical == "stop" else canonical


def check_prompt_blocked(data: Mapping[str, Any], provider: str) -> None:
    """Raise `ContentFiltered` when Gemini refused the prompt itself (no candidates)."""
    reason = (data.get("promptFeedback") or {}).get("blockReason")
    if reason and not data.get("candidates"):
        raise ContentFiltered(
            provider, f"the prompt was blocked by the upstream: {reason}", filter_reason=reason
        )


def tool_call_id(call: Mapping[str, Any], index: int) -> str:
    """The call's own id when the model gave one, else `call_<index>` (most Gemini models
    give none, and the gateway's clients need one to answer the call)."""
    return str(call.get("id") or f"call_{index}")


def parse_generate(data: Mapping[str, Any], model: str, *, provider: str = "google") -> ChatResult:
    """A `GenerateContentResponse` as a `ChatResult` (first candidate)."""
    check_prompt_blocked(data, provider)
    candidate = (data.get("candidates") or [{}])[0]
    parts = (candidate.get("content") or {}).get("parts") or ()
    texts = [p["text"] for p in parts if "text" in p and not p.get("thought")]
    calls = tuple(
        ToolCall(
            id=tool_call_id(p["functionCall"], n),
            name=p["functionCall"].get("name", ""),
            arguments=json.dumps(p["functionCall"].get("args") or {}),
        )
        for n, p in enumerate(p for p in parts if "functionCall" in p)
    )
    return ChatResult(
        id=str(data.get("responseId") or ""),
        model=str(data.get("modelVersion") or model),
        content="".join(texts) if texts else None,
        finish_reason=map_finish_reason(candidate.get("finishReason"), bool(calls)),
        usage=parse_usage(data.get("usageMetadata")),
        tool_calls=calls,
    )


@attrs.define
class StreamTranslator:
    """Turns the events of a `streamGenerateContent?alt=sse` answer into canonical chunks.

    Pure and I/O-free: `feed` takes each event's decoded JSON, `close` is called at the
    end of the stream. Text and whole function calls are passed on as they come; the
    finish reason and usage are kept until `close`, because Gemini repeats (growing)
    usage on every event and only the last one is final.
    """

    provider: str = "google"
    _calls: int = 0
    _finish: str | None = None
    _usage: Usage | None = None

    def feed(self, data: Mapping[str, Any]) -> list[ChatChunk]:
        if "error" in data:
            raise stream_error(self.provider, data)
        check_prompt_blocked(data, self.provider)
        if data.get("usageMetadata"):
            self._usage = parse_usage(data["usageMetadata"])
        candidate = (data.get("candidates") or [{}])[0]
        chunks = [self._chunk(part) for part in (candidate.get("content") or {}).get("parts") or ()]
        if candidate.get("finishReason"):
            self._finish = candidate["finishReason"]
        return [chunk for chunk in chunks if chunk is not None]

    def _chunk(self, part: Mapping[str, Any]) -> ChatChunk | None:
        if "functionCall" in part:
            call = part["functionCall"]
            delta = ToolCallDelta(
                index=self._calls,
                id=tool_call_id(call, self._calls),
                name=call.get("name", ""),
                arguments=json.dumps(call.get("args") or {}),
            )
            self._calls += 1
            return ChatChunk(tool_calls=(delta,))
        if part.get("text") and not part.get("thought"):
            return ChatChunk(content=part["text"])
        return None

    def close(self) -> list[ChatChunk]:
        """The final chunk; a stream that never said why it finished was cut short."""
        if self._finish is None:
            raise StreamInterrupted(self.provider, "the upstream stream ended before finishing")
        reason = map_finish_reason(self._finish, self._calls > 0)
        return [ChatChunk(finish_reason=reason, usage=self._usage)]


def parse_vectors(data: Mapping[str, Any]) -> list[list[float]]:
    """The vectors of a `batchEmbedContents` (or `embedContent`) answer, in input order."""
    if "embedding" in data:
        return [[float(x) for x in data["embedding"].get("values") or ()]]
    return [[float(x) for x in item.get("values") or ()] for item in data.get("embeddings") or ()]


def estimate_tokens(texts: Iterable[str]) -> int:
    """About four characters a token: the Gemini API reports no usage for embeddings, and
    the gateway still needs a number to bill and rate-limit by."""
    return sum(max(1, math.ceil(len(text) / 4)) for text in texts)


def parse_model_ids(data: Mapping[str, Any]) -> list[str]:
    return [str(m["name"]).removeprefix("models/") for m in data.get("models") or () if "name" in m]
