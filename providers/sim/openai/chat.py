"""`POST /v1/chat/completions` of the simulated OpenAI API, whole and streamed."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import attrs

from providers.sim import content
from providers.sim.core import Fault, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import apply_fault
from providers.sim.openai.chat_audio import Voice, heard_clips, speaking, spoken_events
from providers.sim.openai.common import (
    _COMPACT,
    _TEXT_COMPLETION,
    _USAGE,
    CONTEXT_LIMIT,
    MAX_CHOICES,
    MAX_OUTPUT_TOKENS,
    MAX_TOP_LOGPROBS,
    SYSTEM_FINGERPRINT,
    VENDOR,
    OpenAIError,
    _headers,
    check_auth,
    check_model,
    fault_error,
    parse_body,
    refuse_responses_only,
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
    n: int = 1
    top_logprobs: int | None = None  # None: no log-probabilities asked
    moderation_model: str | None = None  # `moderation.model`, when moderation is asked


@attrs.frozen(slots=True)
class ChatPlan(content.ChatPlan):
    """The answer decided before any of it is sent, and whether a stream ends with the
    usage (`stream_options.include_usage`)."""

    include_usage: bool = False
    moderation_model: str | None = None

    @property
    def plain(self) -> bool:
        return super().plain and self.moderation_model is None


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
        n=_choices(body.get("n")),
        top_logprobs=_top_logprobs(body),
        moderation_model=_moderation_model(body.get("moderation")),
    )


def _moderation_model(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("model"), str):
        raise OpenAIError(
            400, "Missing required parameter: 'moderation.model'.", param="moderation"
        )
    return str(value["model"])


def moderation_json(model: str) -> dict[str, Any]:
    """Moderation results for input and output: nothing flagged (the simulator's content
    is harmless by construction)."""
    result = {
        "type": "moderation_result",
        "model": model,
        "flagged": False,
        "categories": {},
        "category_scores": {},
        "category_applied_input_types": {},
    }
    results = {"type": "moderation_results", "model": model, "results": [result]}
    return {"input": results, "output": results}


def _choices(value: Any) -> int:
    """`n`, 1 to 128 as OpenAI takes it."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CHOICES:
        raise OpenAIError(
            400, f"Invalid 'n': expected an integer from 1 to {MAX_CHOICES}.", param="n"
        )
    return value


def _top_logprobs(body: Mapping[str, Any]) -> int | None:
    """How many alternatives per token when `logprobs` is true (0 to 20), else None."""
    top = body.get("top_logprobs")
    if body.get("logprobs") is not True:
        if top is not None:
            raise OpenAIError(
                400, "logprobs must be set to true if top_logprobs is used.", param="top_logprobs"
            )
        return None
    if top is None:
        return 0
    if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= MAX_TOP_LOGPROBS:
        raise OpenAIError(400, "Invalid 'top_logprobs'.", param="top_logprobs")
    return top


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


def attachment_notes(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the messages attach: each `file` part by its name, each `input_audio` part by
    its format (a `file_id` is OpenAI's own file, named by its id)."""
    notes: list[str] = []
    for message in messages:
        parts = message.get("content")
        for part in parts if isinstance(parts, list) else ():
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "file":
                file = part.get("file") or {}
                notes.append(f"document {file.get('filename') or file.get('file_id')}")
            elif kind == "input_audio":
                notes.append(f"audio {(part.get('input_audio') or {}).get('format')}")
    return notes


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
    first, *more = (
        _plan_choice(args, ctx, content.choice_prompt(prompt, i), i) for i in range(args.n)
    )
    return ChatPlan(
        id="chatcmpl-" + os.urandom(12).hex(),
        model=args.model,
        created=int(time.time()),
        prompt_tokens=prompt_tokens,
        tokens=first.tokens,
        tool_call=first.tool_call,
        finish_reason=first.finish_reason,
        logprobs=first.logprobs,
        more_choices=tuple(more),
        include_usage=args.include_usage,
        moderation_model=args.moderation_model,
    )


def _plan_choice(args: ChatArgs, ctx: SimContext, prompt: str, index: int) -> content.ChoicePlan:
    tool_call = _tool_call(args, prompt)
    tokens = [] if tool_call else ctx.reply_tokens(prompt, args.max_tokens, args.schema)
    if tokens:
        tokens = content.received(attachment_notes(args.messages)) + tokens
    tokens, stopped = content.cut_at_stop(tokens, args.stop)
    finish = "tool_calls" if tool_call else "length" if args.max_tokens and not stopped else "stop"
    top = args.top_logprobs
    logprobs = None if top is None or tool_call else content.token_logprobs(tokens, top)
    return content.ChoicePlan(index, tokens, tool_call, finish, logprobs)


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
    return {
        "id": plan.id,
        "object": "chat.completion",
        "created": plan.created,
        "model": plan.model,
        "choices": [_choice_json(choice) for choice in plan.choices],
        "usage": usage_json(plan.prompt_tokens, plan.completion_tokens),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
        **({"moderation": moderation_json(plan.moderation_model)} if plan.moderation_model else {}),
    }


def _choice_json(choice: content.ChoicePlan) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None if choice.tool_call else "".join(choice.tokens),
        "refusal": None,
        "annotations": [],
    }
    if choice.tool_call is not None:
        message["tool_calls"] = [_tool_call_json(choice.tool_call)]
    logprobs = None if choice.logprobs is None else {"content": choice.logprobs, "refusal": None}
    return {
        "index": choice.index,
        "message": message,
        "logprobs": logprobs,
        "finish_reason": choice.finish_reason,
    }


def encode_completion(plan: ChatPlan) -> bytes:
    """`completion_json(plan)` serialized; one text answer (the hot path) from a template."""
    if not plan.plain:
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

    def delta(
        self,
        delta: Mapping[str, Any],
        finish_reason: str | None = None,
        *,
        index: int = 0,
        logprobs: list[dict[str, Any]] | None = None,
    ) -> bytes:
        wrapped = None if logprobs is None else {"content": logprobs, "refusal": None}
        choice = {
            "index": index,
            "delta": delta,
            "logprobs": wrapped,
            "finish_reason": finish_reason,
        }
        return self._prefix + json.dumps(choice, separators=_COMPACT).encode() + self._suffix

    def content(self, text: str) -> bytes:
        """`delta({"content": text})`, from a template: the most frequent event."""
        return b"".join(
            (self._prefix, b'{"index":0,"delta":{"content":', json.dumps(text).encode(),
             b'},"logprobs":null,"finish_reason":null}', self._suffix)
        )  # fmt: skip

    def moderation(self, moderation: Mapping[str, Any]) -> bytes:
        body = json.dumps(moderation, separators=_COMPACT).encode()
        return self._prefix + b'],"moderation":' + body + b"}\n\n"

    def usage(self, usage: Mapping[str, Any]) -> bytes:
        body = json.dumps(usage, separators=_COMPACT).encode()
        return self._prefix + b'],"usage":' + body + b"}\n\n"


async def chat_stream(
    plan: ChatPlan, ctx: SimContext, fault: Fault | None, voice: Voice | None = None
) -> AsyncIterator[bytes]:
    """The SSE events of a streamed completion, paced; ends with `data: [DONE]`.

    Each choice in turn: the role comes with its first paced group (after the time to
    first token), as OpenAI sends it, then its text (with its tokens' log-probabilities
    when asked), its spoken answer (`chat_audio`) or its tool call, then its finish. A
    fault may stall or cut the stream (`StreamCut`) part-way.
    """
    encoder = ChunkEncoder(plan)
    spoken = voice.spoken if voice is not None else {}
    for choice in plan.choices:
        answer = spoken.get(choice.index)
        events = (
            _choice_events(encoder, choice, ctx, fault)
            if answer is None
            else spoken_events(encoder, choice, answer, ctx, fault)
        )
        async with aclosing(events):
            async for event in events:
                yield event
    if plan.moderation_model is not None:
        yield encoder.moderation(moderation_json(plan.moderation_model))
    if plan.include_usage:
        usage = usage_json(plan.prompt_tokens, plan.completion_tokens)
        yield encoder.usage(voice.usage(usage) if voice is not None else usage)
    yield DONE


async def _choice_events(
    encoder: ChunkEncoder, choice: content.ChoicePlan, ctx: SimContext, fault: Fault | None
) -> AsyncGenerator[bytes]:
    call, index = choice.tool_call, choice.index
    pieces = content.fragments(call.arguments) if call else choice.tokens
    sent = 0
    async with aclosing(ctx.pace(pieces, fault)) as groups:
        async for group in groups:
            text = "".join(group)
            if call is not None:
                if not sent:
                    yield encoder.delta(_first_call_delta(call), index=index)
                arguments = {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}
                yield encoder.delta(arguments, index=index)
            else:
                if not sent:
                    opening = {"role": "assistant", "content": "", "refusal": None}
                    yield encoder.delta(opening, index=index)
                yield _text_event(encoder, choice, text, sent, len(group))
            sent += len(group)
    yield encoder.delta({}, choice.finish_reason, index=index)


def _text_event(
    encoder: ChunkEncoder, choice: content.ChoicePlan, text: str, start: int, count: int
) -> bytes:
    if choice.index == 0 and choice.logprobs is None:
        return encoder.content(text)
    logprobs = None if choice.logprobs is None else choice.logprobs[start : start + count]
    return encoder.delta({"content": text}, index=choice.index, logprobs=logprobs)


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
        body = parse_body(request)
        args = chat_args(body)
        refuse_responses_only(args.model)
        asked = speaking(body, args.model)
        clips = heard_clips(args.messages, args.model)
        fault = ctx.fault(args.model, VENDOR)
        await apply_fault(fault, lambda f, _: fault_error(f, args.model))
        plan = plan_chat(args, ctx)
        voice = await Voice.of(plan, asked, clips, ctx) if asked or clips else None
    except OpenAIError as error:
        return error.response()
    if args.stream:
        return SimStream(chat_stream(plan, ctx, fault, voice), headers=_headers())
    call = plan.tool_call
    pieces = content.fragments(call.arguments) if call else plan.tokens
    for choice in plan.more_choices:
        pieces = pieces + (
            choice.tokens or [choice.tool_call.arguments if choice.tool_call else ""]
        )
    await ctx.pace_whole(pieces, fault)
    if voice is None:
        return SimResponse(200, encode_completion(plan), headers=_headers())
    answer = voice.completion(completion_json(plan))
    return SimResponse(200, json.dumps(answer, separators=_COMPACT).encode(), headers=_headers())
