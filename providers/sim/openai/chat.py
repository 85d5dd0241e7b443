"""`POST /v1/chat/completions` of the simulated OpenAI API, whole and streamed."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import attrs

from providers.sim import content
from providers.sim.core import Fault, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import apply_fault
from providers.sim.openai.common import (
    _COMPACT,
    _TEXT_COMPLETION,
    _USAGE,
    CONTEXT_LIMIT,
    MAX_OUTPUT_TOKENS,
    SYSTEM_FINGERPRINT,
    VENDOR,
    OpenAIError,
    _headers,
    check_auth,
    check_model,
    fault_error,
    parse_body,
    usage_json,
)
from providers.types import ToolCall
from streams.sse import DONE


@attrs.frozen(slots=True)
class ChatArgs:
    """The parts of a chat request the simulator acts on, validated."""

    model: str
    messages: Sequence[Mapping[str, Any]]
    max_tokens: int | None
    stream: bool
    include_usage: bool
    tools: Sequence[Mapping[str, Any]]
    tool_choice: str | Mapping[str, Any] | None
    schema: Mapping[str, Any] | None = None  # what `response_format` asks the answer to be
    stop: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class ChatPlan(content.ChatPlan):
    """The answer decided before any of it is sent, and whether a stream ends with the
    usage (`stream_options.include_usage`)."""

    include_usage: bool


def chat_args(body: Mapping[str, Any]) -> ChatArgs:
    """Validate a chat request body as OpenAI does, for the fields the simulator uses."""
    model = check_model(body)
    messages = body.get("messages")
    if messages is None:
        raise OpenAIError(
            400,
            "Missing required parameter: 'messages'.",
            param="messages",
            code="missing_required_parameter",
        )
    if not isinstance(messages, list) or not messages:
        raise OpenAIError(400, "Invalid 'messages': expected a non-empty array.", param="messages")
    if body.get("n") not in (None, 1):
        raise OpenAIError(400, "The simulator supports only n=1.", param="n")
    options = body.get("stream_options") or {}
    return ChatArgs(
        model=model,
        messages=[m if isinstance(m, dict) else {} for m in messages],
        max_tokens=_max_tokens(body),
        stream=bool(body.get("stream")),
        include_usage=bool(options.get("include_usage")) if isinstance(options, dict) else False,
        tools=_tools(body.get("tools")),
        tool_choice=body.get("tool_choice"),
        schema=content.response_format_schema(body.get("response_format")),
        stop=content.stop_sequences(body.get("stop")),
    )


def _max_tokens(body: Mapping[str, Any]) -> int | None:
    name = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OpenAIError(
            400,
            f"Invalid '{name}': expected an integer >= 1.",
            param=name,
            code="integer_below_min_value",
        )
    if value > MAX_OUTPUT_TOKENS:
        raise OpenAIError(
            400,
            f"{name} is too large: {value}. This model's maximum context length is "
            f"{CONTEXT_LIMIT} tokens.",
            param=name,
            code="context_length_exceeded",
        )
    return value


def _tools(tools: Any) -> list[Mapping[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise OpenAIError(400, "Invalid 'tools': expected an array.", param="tools")
    for position, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise OpenAIError(
                400,
                f"Missing required parameter: 'tools[{position}].function'.",
                param=f"tools[{position}].function",
                code="missing_required_parameter",
            )
    return tools


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message: string content, text parts, and tool call arguments."""
    body = message.get("content")
    if isinstance(body, str):
        text = body
    elif isinstance(body, list):
        text = " ".join(str(part.get("text", "")) for part in body if isinstance(part, dict))
    else:
        text = ""
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            text += str((call.get("function") or {}).get("arguments", ""))
    return text


def plan_chat(args: ChatArgs, ctx: SimContext) -> ChatPlan:
    """Decide the whole answer: its tokens (or tool call), usage and finish reason."""
    texts = [message_text(message) for message in args.messages]
    prompt = "\n".join(texts)
    prompt_tokens = content.count_prompt_tokens(texts)
    if args.tools:
        prompt_tokens += content.count_tokens(json.dumps(args.tools))
    if prompt_tokens > CONTEXT_LIMIT:
        raise OpenAIError(
            400,
            f"This model's maximum context length is {CONTEXT_LIMIT} tokens. However, your "
            f"messages resulted in {prompt_tokens} tokens. Please reduce the length of the "
            "messages.",
            param="messages",
            code="context_length_exceeded",
        )
    tool_call = _tool_call(args, prompt)
    tokens = [] if tool_call else ctx.reply_tokens(prompt, args.max_tokens, args.schema)
    tokens, stopped = content.cut_at_stop(tokens, args.stop)
    finish = "tool_calls" if tool_call else "length" if args.max_tokens and not stopped else "stop"
    return ChatPlan(
        id="chatcmpl-" + os.urandom(12).hex(),
        model=args.model,
        created=int(time.time()),
        prompt_tokens=prompt_tokens,
        tokens=tokens,
        tool_call=tool_call,
        finish_reason=finish,
        include_usage=args.include_usage,
    )


def _tool_call(args: ChatArgs, prompt: str) -> ToolCall | None:
    last_role = args.messages[-1].get("role")
    if not content.wants_tool_call(args.tools, args.tool_choice, last_role):
        return None
    function = content.pick_tool(args.tools, args.tool_choice, prompt)
    if function is None:
        raise OpenAIError(
            400,
            "Invalid 'tool_choice': the function it names is not in 'tools'.",
            param="tool_choice",
        )
    return content.plan_tool_call(function, prompt)


def completion_json(plan: ChatPlan) -> dict[str, Any]:
    """A non-streamed `chat.completion` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None if plan.tool_call else "".join(plan.tokens),
        "refusal": None,
        "annotations": [],
    }
    if plan.tool_call is not None:
        message["tool_calls"] = [_tool_call_json(plan.tool_call)]
    return {
        "id": plan.id,
        "object": "chat.completion",
        "created": plan.created,
        "model": plan.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": plan.finish_reason}
        ],
        "usage": usage_json(plan.prompt_tokens, plan.completion_tokens),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def encode_completion(plan: ChatPlan) -> bytes:
    """`completion_json(plan)` serialized; text answers (the hot path) from a template."""
    if plan.tool_call is not None:
        return json.dumps(completion_json(plan), separators=_COMPACT).encode()
    prompt, completion = plan.prompt_tokens, plan.completion_tokens
    text = _TEXT_COMPLETION % (
        plan.id,
        plan.created,
        json.dumps(plan.model),
        json.dumps("".join(plan.tokens)),
        plan.finish_reason,
        _USAGE % (prompt, completion, prompt + completion),
    )
    return text.encode()


def _tool_call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


class ChunkEncoder:
    """Encodes the SSE events of one streamed completion from a precomputed prefix.

    Each event repeats the completion's id, model and timestamps, so the shared part is
    rendered once and only the delta is serialized per chunk.
    """

    def __init__(self, plan: ChatPlan) -> None:
        head = json.dumps(
            {
                "id": plan.id,
                "object": "chat.completion.chunk",
                "created": plan.created,
                "model": plan.model,
                "service_tier": "default",
                "system_fingerprint": SYSTEM_FINGERPRINT,
            },
            separators=_COMPACT,
        )
        self._prefix = b"data: " + head[:-1].encode() + b',"choices":['
        self._suffix = b'],"usage":null}\n\n' if plan.include_usage else b"]}\n\n"

    def delta(self, delta: Mapping[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._prefix + json.dumps(choice, separators=_COMPACT).encode() + self._suffix

    def content(self, text: str) -> bytes:
        """`delta({"content": text})`, from a template: the most frequent event."""
        return b"".join(
            (self._prefix, b'{"index":0,"delta":{"content":', json.dumps(text).encode(),
             b'},"logprobs":null,"finish_reason":null}', self._suffix)
        )  # fmt: skip

    def usage(self, usage: Mapping[str, Any]) -> bytes:
        body = json.dumps(usage, separators=_COMPACT).encode()
        return self._prefix + b'],"usage":' + body + b"}\n\n"


async def chat_stream(plan: ChatPlan, ctx: SimContext, fault: Fault | None) -> AsyncIterator[bytes]:
    """The SSE events of a streamed completion, paced; ends with `data: [DONE]`.

    The role comes with the first paced group (after the time to first token), as
    OpenAI sends it; a fault may stall or cut the stream (`StreamCut`) part-way.
    """
    encoder = ChunkEncoder(plan)
    call = plan.tool_call
    pieces = content.fragments(call.arguments) if call else plan.tokens
    first = True
    async with aclosing(ctx.pace(pieces, fault)) as groups:
        async for group in groups:
            text = "".join(group)
            if call is None:
                if first:
                    yield encoder.delta({"role": "assistant", "content": "", "refusal": None})
                yield encoder.content(text)
            else:
                if first:
                    yield encoder.delta(_first_call_delta(call))
                yield encoder.delta({"tool_calls": [{"index": 0, "function": {"arguments": text}}]})
            first = False
    yield encoder.delta({}, plan.finish_reason)
    if plan.include_usage:
        yield encoder.usage(usage_json(plan.prompt_tokens, plan.completion_tokens))
    yield DONE


def _first_call_delta(call: ToolCall) -> dict[str, Any]:
    """The delta opening a streamed tool call: role, id, name and empty arguments."""
    function = {"name": call.name, "arguments": ""}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"index": 0, "id": call.id, "type": "function", "function": function}],
        "refusal": None,
    }


async def chat_completions(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    """`POST /v1/chat/completions`, streamed or not."""
    try:
        check_auth(request)
        args = chat_args(parse_body(request))
        fault = ctx.fault(args.model, VENDOR)
        await apply_fault(fault, lambda f, _: fault_error(f, args.model))
        plan = plan_chat(args, ctx)
    except OpenAIError as error:
        return error.response()
    if args.stream:
        return SimStream(chat_stream(plan, ctx, fault), headers=_headers())
    call = plan.tool_call
    await ctx.pace_whole(content.fragments(call.arguments) if call else plan.tokens, fault)
    return SimResponse(200, encode_completion(plan), headers=_headers())
