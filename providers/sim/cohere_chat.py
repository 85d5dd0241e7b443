"""Simulated Cohere chat API v2 (`POST /v2/chat`): the request checks, the whole answer and
the typed stream events, as Cohere sends them and the official `cohere` SDK reads them.

Pure apart from pacing: `plan_chat` validates a request and decides the whole answer
(text, or one tool call with its `tool_plan`); `answer_json` and `stream_events` put it
on the wire. A refused request raises `ChatRefusal` with Cohere's status and message.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import attrs

from providers.sim import content
from providers.sim.core import Fault, SimContext
from providers.sim.openai import message_text
from providers.types import ToolCall
from streams.sse import encode_event

CONTEXT_LIMIT = 256_000
# Every field of the v2 chat request; anything else is refused, as Cohere does.
CHAT_FIELDS = frozenset(
    {
        "model", "messages", "tools", "strict_tools", "documents", "citation_options",
        "response_format", "safety_mode", "max_tokens", "stop_sequences", "temperature",
        "seed", "frequency_penalty", "presence_penalty", "k", "p", "logprobs",
        "tool_choice", "thinking", "priority", "stream",
    }
)  # fmt: skip
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_TOOL_CHOICES = {"REQUIRED": "required", "NONE": "none"}
_COMPACT = (",", ":")


class ChatRefusal(Exception):
    """A chat request the simulated Cohere refuses with `status` and `message`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@attrs.frozen(slots=True)
class ChatPlan:
    """The whole answer, decided before any of it is sent: text tokens or one tool call."""

    id: str
    prompt_tokens: int
    tokens: list[str]
    tool_call: ToolCall | None
    tool_plan: str
    finish_reason: str

    @property
    def completion_tokens(self) -> int:
        if self.tool_call is not None:
            call = self.tool_call
            return content.count_tokens(self.tool_plan + call.name + call.arguments)
        return len(self.tokens)


# -- the request ---------------------------------------------------------------------------


def _invalid(message: str) -> ChatRefusal:
    return ChatRefusal(400, f"invalid request: {message}")


def check_fields(body: Mapping[str, Any]) -> None:
    """Known fields only, and the ranges Cohere documents: `p` 0.01-0.99, penalties 0-1,
    `thinking` of type enabled (with a positive `token_budget`) or disabled."""
    for name in body:
        if name not in CHAT_FIELDS:
            raise _invalid(f"unknown field: parameter '{name}' is not a valid field")
    p = body.get("p")
    if p is not None and not 0.01 <= p <= 0.99:
        raise _invalid("p must be between 0.01 and 0.99")
    for name in ("frequency_penalty", "presence_penalty"):
        value = body.get(name)
        if value is not None and not 0 <= value <= 1:
            raise _invalid(f"{name} must be between 0 and 1")
    _check_thinking(body.get("thinking"))


def _check_thinking(thinking: Any) -> None:
    if thinking is None:
        return
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    budget = thinking.get("token_budget") if isinstance(thinking, dict) else None
    if kind not in ("enabled", "disabled") or (
        budget is not None and (not isinstance(budget, int) or budget < 1)
    ):
        raise _invalid(
            "thinking must be {type: enabled or disabled, token_budget: a positive integer}"
        )


def check_messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages must not be empty")
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise _invalid(f"messages[{position}].role must be one of {sorted(_ROLES)}")
        if message["role"] == "tool" and not message.get("tool_call_id"):
            raise _invalid(f"messages[{position}].tool_call_id is required for a tool message")
        if message["role"] == "assistant" and not (
            message.get("content") or message.get("tool_calls")
        ):
            raise _invalid(f"messages[{position}] must have content or tool_calls")
    return messages


def check_tools(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tools = body.get("tools") or []
    for position, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _invalid(f"tools[{position}].function.name is required")
        if not isinstance(function.get("parameters"), dict):
            raise _invalid(f"tools[{position}].function.parameters is required")
    return list(tools)


def check_tool_choice(body: Mapping[str, Any], tools: Sequence[Any]) -> str | None:
    """The choice in `content`'s vocabulary: `REQUIRED` is `required`, `NONE` is `none`."""
    choice = body.get("tool_choice")
    if choice is None:
        return None
    if choice not in _TOOL_CHOICES:
        raise _invalid("tool_choice must be one of REQUIRED or NONE")
    if not tools:
        raise _invalid("tool_choice requires tools to be specified")
    return _TOOL_CHOICES[choice]


def check_max_tokens(body: Mapping[str, Any]) -> int | None:
    value = body.get("max_tokens")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _invalid("max_tokens must be a positive integer")
    return value


def _answer_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Cohere's JSON mode: `response_format` `{"type": "json_object"}`, with the schema
    itself under `json_schema` when there is one; None (prose) otherwise."""
    value = body.get("response_format")
    if not isinstance(value, dict) or value.get("type") != "json_object":
        return None
    schema = value.get("json_schema")
    return schema if isinstance(schema, dict) else content.JSON_OBJECT_SCHEMA


def plan_chat(body: Mapping[str, Any], ctx: SimContext) -> ChatPlan:
    """Validate the request and decide the whole answer."""
    check_fields(body)
    messages = check_messages(body)
    tools = check_tools(body)
    choice, max_tokens = check_tool_choice(body, tools), check_max_tokens(body)
    texts = [message_text(message) for message in messages]
    prompt = "\n".join(texts)
    prompt_tokens = content.count_prompt_tokens(texts)
    if tools:
        prompt_tokens += content.count_tokens(json.dumps(tools))
    if prompt_tokens > CONTEXT_LIMIT:
        raise _invalid(
            "too many tokens: total number of tokens in the prompt cannot exceed "
            f"{CONTEXT_LIMIT} - received {prompt_tokens}. Try using a shorter prompt"
        )
    call = _tool_call(tools, choice, messages[-1].get("role"), prompt)
    tokens = [] if call else ctx.reply_tokens(prompt, max_tokens, _answer_schema(body))
    stops = content.stop_sequences(body.get("stop_sequences"))
    tokens, stopped = content.cut_at_stop(tokens, stops)
    if call is not None:
        finish = "TOOL_CALL"
    elif stopped is not None:
        finish = "STOP_SEQUENCE"
    elif max_tokens is not None and len(tokens) >= max_tokens:
        finish = "MAX_TOKENS"
    else:
        finish = "COMPLETE"
    plan = f"I will call {call.name} to answer this." if call else ""
    return ChatPlan(str(uuid.uuid4()), prompt_tokens, tokens, call, plan, finish)


def _tool_call(
    tools: Sequence[Mapping[str, Any]], choice: str | None, last_role: Any, prompt: str
) -> ToolCall | None:
    if not content.wants_tool_call(tools, choice, last_role):
        return None
    function = content.pick_tool(tools, choice, prompt)
    if function is None:
        return None
    call = content.plan_tool_call(function, prompt)
    return attrs.evolve(call, id=tool_call_id(call.name, call.id))


def tool_call_id(name: str, seed: str) -> str:
    """Cohere's call ids are the function's name and a hex suffix (`get_weather_3c1f...`)."""
    return f"{name}_{hashlib.sha256(seed.encode()).hexdigest()[:12]}"


# -- the answer ----------------------------------------------------------------------------


def usage_json(plan: ChatPlan) -> dict[str, Any]:
    """Billed units and raw tokens; the raw input count includes Cohere's own preamble."""
    return {
        "billed_units": {
            "input_tokens": plan.prompt_tokens,
            "output_tokens": plan.completion_tokens,
        },
        "tokens": {
            "input_tokens": plan.prompt_tokens + 9,
            "output_tokens": plan.completion_tokens,
        },
    }


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def answer_json(plan: ChatPlan) -> dict[str, Any]:
    """A non-streamed answer, as `ClientV2.chat` parses it."""
    message: dict[str, Any] = {"role": "assistant"}
    if plan.tool_call is not None:
        message["tool_plan"] = plan.tool_plan
        message["tool_calls"] = [_call_json(plan.tool_call)]
    else:
        message["content"] = [{"type": "text", "text": "".join(plan.tokens)}]
    return {
        "id": plan.id,
        "message": message,
        "finish_reason": plan.finish_reason,
        "usage": usage_json(plan),
    }


def event(kind: str, **fields: Any) -> bytes:
    """One typed SSE event: the type both as the `event:` name and in the data."""
    return encode_event(kind, json.dumps({"type": kind, **fields}, separators=_COMPACT))


def _message_start(plan: ChatPlan) -> bytes:
    empty = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    return event("message-start", id=plan.id, delta={"message": empty})


def _text_events(group: list[str], first: bool) -> list[bytes]:
    out = []
    if first:
        start = {"message": {"content": {"type": "text", "text": ""}}}
        out.append(event("content-start", index=0, delta=start))
    text = {"message": {"content": {"text": "".join(group)}}}
    out.append(event("content-delta", index=0, delta=text))
    return out


def _call_events(plan: ChatPlan, call: ToolCall, group: list[str], first: bool) -> list[bytes]:
    out = []
    if first:
        for piece in content.fragments(plan.tool_plan):
            out.append(event("tool-plan-delta", delta={"message": {"tool_plan": piece}}))
        opened = {**_call_json(call), "function": {"name": call.name, "arguments": ""}}
        out.append(event("tool-call-start", index=0, delta={"message": {"tool_calls": opened}}))
    arguments = {"function": {"arguments": "".join(group)}}
    out.append(event("tool-call-delta", index=0, delta={"message": {"tool_calls": arguments}}))
    return out


def _closing_events(plan: ChatPlan) -> list[bytes]:
    close = "tool-call-end" if plan.tool_call is not None else "content-end"
    end = {"finish_reason": plan.finish_reason, "usage": usage_json(plan)}
    return [event(close, index=0), event("message-end", delta=end)]


async def stream_events(
    plan: ChatPlan, ctx: SimContext, fault: Fault | None
) -> AsyncIterator[bytes]:
    """The events of a streamed answer, paced: `message-start`, then the text
    (`content-start`, `content-delta`s, `content-end`) or the tool call (`tool-plan-delta`s,
    `tool-call-start`, `tool-call-delta`s, `tool-call-end`), then `message-end` with the
    finish reason and usage. A fault may stall or cut (`StreamCut`) it part-way."""
    call = plan.tool_call
    pieces = content.fragments(call.arguments) if call else plan.tokens or [""]
    yield _message_start(plan)
    first = True
    async with aclosing(ctx.pace(pieces, fault)) as groups:
        async for group in groups:
            frames = _call_events(plan, call, group, first) if call else _text_events(group, first)
            first = False
            for frame in frames:
                yield frame
    for frame in _closing_events(plan):
        yield frame
