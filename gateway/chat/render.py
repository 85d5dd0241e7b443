"""The bytes a chat client receives: completion bodies, stream chunks, metadata, headers.

Pure functions of the trip and its accounting. Every vendor's answer reaches the
client in this one shape, which is the chat-completions protocol plus the gateway's
`_gateway` and `service` objects.

A request in the legacy `functions` form is answered in that form: the call in
`message.function_call` (streamed as `delta.function_call`) and the finish reason
`function_call`, as OpenAI answered such requests; a client that old reads nothing
else. The form has room for one call, so a second call of the same answer is left out.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.chat.shapes import (
    ChatAnswerMessage,
    ChatChunkChoice,
    ChatCompletion,
    ChatCompletionChoice,
    ChatCompletionChunk,
    ChatLogprobs,
    ChatService,
    ChatToolCall,
    ChatUsage,
)
from gateway.chat.trip import Trip
from gateway.kernels.splice import Splice
from gateway.platform.jsonio import dumps
from gateway.upstream.accounting import Accounting, estimate_prompt_tokens
from gateway.upstream.footprint_render import carbon_object, energy_object
from providers.types import (
    ChatChoice,
    ChatChunk,
    ChatResult,
    TokenLogprob,
    ToolCall,
    ToolCallDelta,
)


def completion_id(trip: Trip) -> str:
    return "chatcmpl-" + trip.request_id.replace("-", "")


def completion_body(trip: Trip, result: ChatResult, accounting: Accounting) -> ChatCompletion:
    choices = result.choices
    body: ChatCompletion = {
        "id": completion_id(trip),
        "object": "chat.completion",
        "created": trip.created,
        "model": trip.target.model_id,
        "choices": [_choice(trip, choice) for choice in choices],
        "usage": usage_object(accounting),
        "service": service_object(trip, accounting),
        "_gateway": gateway_metadata(trip, accounting, tools_called(choices)),
    }
    if result.moderation is not None:
        body["moderation"] = result.moderation
    return body


def tools_called(choices: Sequence[ChatChoice]) -> list[str]:
    return [call.name for choice in choices for call in choice.tool_calls]


def _choice(trip: Trip, choice: ChatChoice) -> ChatCompletionChoice:
    message: ChatAnswerMessage = {"role": "assistant", "content": choice.content}
    if choice.tool_calls and legacy(trip):
        first = choice.tool_calls[0]
        message["function_call"] = {"name": first.name, "arguments": first.arguments}
    elif choice.tool_calls:
        message["tool_calls"] = [_tool_call(call) for call in choice.tool_calls]
    return {
        "index": choice.index,
        "message": message,
        "finish_reason": client_finish_reason(trip, choice.finish_reason),
        "logprobs": logprobs_object(choice.logprobs),
    }


def logprobs_object(entries: Sequence[TokenLogprob] | None) -> ChatLogprobs | None:
    """A choice's `logprobs` (null unless they were asked for)."""
    if entries is None:
        return None
    return {"content": list(entries), "refusal": None}


def legacy(trip: Trip) -> bool:
    """Whether the client asked in the legacy `functions` form, and is answered in it."""
    return trip.params.used_legacy_functions


def client_finish_reason(trip: Trip, reason: str) -> str:
    """`tool_calls` is `function_call` for a legacy request."""
    return "function_call" if reason == "tool_calls" and legacy(trip) else reason


def _tool_call(call: ToolCall) -> ChatToolCall:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def usage_object(accounting: Accounting) -> ChatUsage:
    usage = accounting.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def service_object(trip: Trip, accounting: Accounting) -> ChatService:
    cost = accounting.cost
    return {
        "request_id": trip.request_id,
        "provider": trip.target.provider_id,
        "latency_ms": accounting.latency_ms,
        "cache": {"hit": trip.cache_hit},
        "cost": {"input": cost.input, "output": cost.output, "total": cost.total},
    }


def gateway_metadata(trip: Trip, accounting: Accounting, tools_called: list[str]) -> dict[str, Any]:
    request = trip.params.request
    return {
        "request_id": trip.request_id,
        "latency_ms": accounting.latency_ms,
        "user_id": request.user or trip.principal.key_id,
        "timestamp": trip.created,
        "routing": routing_object(trip, accounting),
        "alternatives": [
            {"provider": t.provider_id, "model": t.model_id} for t in trip.resolution.alternatives
        ],
        "rate_limiting": {"enabled": True, "retry_attempts": trip.retries, "retry_delay_ms": 0},
        "fallback": fallback_object(trip),
        "tools": {
            "enabled": bool(request.tools),
            "tool_count": len(request.tools or ()),
            "tool_calls_made": len(tools_called),
            "tools_called": tools_called,
        },
        "compliance": {"enabled": False, "classification": None, "regime": None, "redacted": False},
        "energy": energy_object(accounting),
        "carbon": carbon_object(accounting),
    }


def fallback_object(trip: Trip) -> dict[str, Any]:
    """What the chain tried: whether it fell back, to what, and every attempt."""
    return {
        "fallback_attempted": len(trip.attempts) > 1,
        "fallback_provider": trip.target.provider_id if trip.fell_back else None,
        "fallback_model": trip.target.model_id if trip.fell_back else None,
        "fallback_result": ("success" if trip.fell_back else None),
        "attempts": list(trip.attempts),
    }


def routing_object(trip: Trip, accounting: Accounting) -> dict[str, Any]:
    resolution = trip.resolution
    return {
        "mode": resolution.mode,
        "task_type": trip.task_type,
        "reasoning": resolution.reasoning,
        "estimated_cost": estimated_cost(trip),
        "actual_cost": accounting.cost.total,
        "provider": trip.target.provider_id,
        "model": trip.target.model_id,
    }


def estimated_cost(trip: Trip) -> float:
    """Before the call: the prompt estimate plus the requested (or typical) output size."""
    info = trip.target.info
    if info is None:
        return 0.0
    request = trip.params.request
    prompt = estimate_prompt_tokens(request.messages, request.tools)
    output = (request.max_tokens or 256) * request.choices
    return info.cost(prompt, output).total


# -- streams -------------------------------------------------------------------------------


def chunk_frame(
    trip: Trip,
    delta: dict[str, Any],
    finish_reason: str | None = None,
    *,
    index: int = 0,
    logprobs: Sequence[TokenLogprob] | None = None,
) -> ChatCompletionChunk:
    choice: ChatChunkChoice = {
        "index": index,
        "delta": delta,
        "finish_reason": finish_reason,
        "logprobs": logprobs_object(logprobs),
    }
    return {
        "id": completion_id(trip),
        "object": "chat.completion.chunk",
        "created": trip.created,
        "model": trip.target.model_id,
        "choices": [choice],
    }


def sse(payload: Mapping[str, Any]) -> bytes:
    return b"data: " + dumps(payload) + b"\n\n"


def role_chunks(trip: Trip) -> bytes:
    """The first delta of each choice: its role."""
    return b"".join(
        sse(chunk_frame(trip, {"role": "assistant", "content": ""}, index=index))
        for index in range(trip.params.request.choices)
    )


def content_chunk(trip: Trip, chunk: ChatChunk) -> bytes:
    """A chunk's text (and the log-probabilities of its tokens), padded when the client
    asked for `stream_options.include_obfuscation`."""
    delta = {"content": chunk.content} if chunk.content else {}
    frame = chunk_frame(trip, delta, index=chunk.index, logprobs=chunk.logprobs)
    if trip.params.obfuscate:
        frame["obfuscation"] = obfuscation(len(chunk.content or ""))
    return sse(frame)


class ContentFrames:
    """`content_chunk` for one stream's plain text chunks (the first choice, no
    log-probabilities, no obfuscation), as the bytes around the text rendered once: a
    chunk is then the text's JSON string spliced in, the very bytes `content_chunk`
    makes, without building and encoding a frame per chunk. Anything else is rendered
    whole."""

    __slots__ = ("_trip", "plain")

    def __init__(self, trip: Trip) -> None:
        self._trip = trip
        # The first choice's plain text delta, spliced; None when every chunk is padded.
        self.plain = (
            None
            if trip.params.obfuscate
            else Splice.around(lambda text: sse(chunk_frame(trip, {"content": text})))
        )

    def render(self, chunk: ChatChunk) -> bytes:
        if chunk.index or chunk.logprobs or self.plain is None or not chunk.content:
            return content_chunk(self._trip, chunk)
        return self.plain.render(chunk.content)


OBFUSCATION_BLOCK = 32
_OBFUSCATION_ALPHABET = string.ascii_letters + string.digits


def obfuscation(length: int) -> str:
    """Random characters that bring a delta's text up to the next multiple of
    `OBFUSCATION_BLOCK` (at least one), so chunk sizes say little about the tokens."""
    pad = OBFUSCATION_BLOCK - length % OBFUSCATION_BLOCK
    return "".join(secrets.choice(_OBFUSCATION_ALPHABET) for _ in range(pad))


def moderation_chunk(trip: Trip, moderation: Mapping[str, Any]) -> bytes:
    """The vendor's moderation results, in a chunk of their own (no choices)."""
    frame = chunk_frame(trip, {})
    frame["choices"] = []
    frame["moderation"] = moderation
    return sse(frame)


def finish_chunk(trip: Trip, finish_reason: str, index: int) -> bytes:
    """The end of a choice other than the first (whose end is the final chunk)."""
    return sse(chunk_frame(trip, {}, client_finish_reason(trip, finish_reason), index=index))


def tool_calls_chunk(trip: Trip, pieces: tuple[ToolCallDelta, ...], index: int = 0) -> bytes:
    if legacy(trip):
        return _function_call_chunk(trip, pieces, index)
    delta = {"tool_calls": [_tool_piece(p) for p in pieces]}
    return sse(chunk_frame(trip, delta, index=index))


def _function_call_chunk(trip: Trip, pieces: tuple[ToolCallDelta, ...], index: int) -> bytes:
    """The pieces of the first call as `delta.function_call`; nothing for later calls."""
    frames = []
    for piece in pieces:
        if piece.index != 0:
            continue
        function: dict[str, Any] = {"arguments": piece.arguments}
        if piece.name is not None:
            function["name"] = piece.name
        frames.append(sse(chunk_frame(trip, {"function_call": function}, index=index)))
    return b"".join(frames)


def _tool_piece(piece: ToolCallDelta) -> dict[str, Any]:
    item: dict[str, Any] = {"index": piece.index}
    function: dict[str, Any] = {"arguments": piece.arguments}
    if piece.id is not None:
        item["id"] = piece.id
        item["type"] = "function"
    if piece.name is not None:
        function["name"] = piece.name
    item["function"] = function
    return item


def final_chunk(
    trip: Trip, finish_reason: str, accounting: Accounting, tools_called: list[str]
) -> bytes:
    frame = chunk_frame(trip, {}, client_finish_reason(trip, finish_reason))
    frame["service"] = service_object(trip, accounting)
    frame["_gateway"] = gateway_metadata(trip, accounting, tools_called)
    return sse(frame)


def usage_chunk(trip: Trip, accounting: Accounting) -> bytes:
    frame = chunk_frame(trip, {})
    frame["choices"] = []
    frame["usage"] = usage_object(accounting)
    return sse(frame)


def error_event(body: dict[str, Any]) -> bytes:
    return sse(body)
