"""`POST /v1/responses` of the simulated OpenAI API, whole and streamed.

The answer is the chat simulator's for the same conversation (`plan_chat`): the request's
`instructions` and `input` items (messages, function calls and their outputs) are read as
the chat-completions messages they amount to, its function tools as chat tools and its
`text.format` as a `response_format`. The reply is a response object (a `message` item,
or one `function_call` item) or the documented event stream with sequence numbers, as the
official `openai` client parses them. Stored responses are not simulated: a request with
`previous_response_id` is refused (400), as `store` changes nothing here. The models OpenAI
serves only here (the catalog's `endpoints: ["responses"]`, `o3-pro`) are answered as any;
chat completions refuses them as OpenAI does (`common.refuse_responses_only`).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from providers.sim import content
from providers.sim.core import Fault, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import apply_fault
from providers.sim.openai.chat import ChatPlan, chat_args, plan_chat
from providers.sim.openai.common import (
    VENDOR,
    OpenAIError,
    _headers,
    check_auth,
    fault_error,
    parse_body,
)
from streams.sse import encode_event


def chat_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat-completions body a Responses request amounts to (for `chat_args`)."""
    if body.get("previous_response_id"):
        raise OpenAIError(400, "The simulator keeps no responses.", param="previous_response_id")
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "developer", "content": body["instructions"]})
    messages += _messages(body.get("input"))
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    tools = [_chat_tool(t) for t in body.get("tools") or () if isinstance(t, dict)]
    if tools:
        chat["tools"] = tools
        chat["tool_choice"] = _chat_choice(body.get("tool_choice"))
    form = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(form, dict) and form.get("type") == "json_schema":
        chat["response_format"] = {"type": "json_schema", "json_schema": form}
    elif isinstance(form, dict) and form.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    return chat


def _messages(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise OpenAIError(400, "Missing required parameter: 'input'.", param="input")
    messages: list[dict[str, Any]] = []
    for item in value:
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {"name": item.get("name"), "arguments": item.get("arguments", "")}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": item.get("call_id"), "type": "function", "function": call}
                    ],
                }
            )
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": _text(item.get("output")),
                }
            )
        elif kind != "reasoning":
            raise OpenAIError(400, f"Invalid input item type: {kind!r}.", param="input")
    return messages


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    parts = value if isinstance(value, list) else ()
    return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def _chat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    if tool.get("type") != "function":
        raise OpenAIError(400, f"Unsupported tool type: {tool.get('type')!r}.", param="tools")
    function = {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
    return {"type": "function", "function": function}


def _chat_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


# -- the answer ----------------------------------------------------------------------------


def _response_id(plan: ChatPlan) -> str:
    return "resp_" + plan.id.removeprefix("chatcmpl-")


def response_json(
    plan: ChatPlan, body: Mapping[str, Any], status: str, output: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    finished = status != "in_progress"
    return {
        "id": _response_id(plan),
        "object": "response",
        "created_at": plan.created,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": plan.model,
        "output": list(output),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": list(body.get("tools") or ()),
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": _usage(plan) if finished else None,
        "metadata": body.get("metadata") or {},
    }


def _usage(plan: ChatPlan) -> dict[str, Any]:
    prompt, completion = plan.prompt_tokens, plan.completion_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _status(plan: ChatPlan) -> str:
    return "incomplete" if plan.finish_reason == "length" else "completed"


def output_item(
    plan: ChatPlan, item_id: str, status: str, text: str | None = None
) -> dict[str, Any]:
    call = plan.tool_call
    if call is not None:
        arguments = call.arguments if text is None else text
        return {
            "id": item_id,
            "type": "function_call",
            "status": status,
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments,
        }
    part = {
        "type": "output_text",
        "text": "".join(plan.tokens) if text is None else text,
        "annotations": [],
        "logprobs": [],
    }
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [part] if status != "in_progress" else [],
    }


# -- the stream ----------------------------------------------------------------------------


class EventEncoder:
    """Numbers and encodes the events of one streamed response."""

    def __init__(self) -> None:
        self.sequence = 0

    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return encode_event(kind, json.dumps(payload, separators=(",", ":")))


async def response_stream(
    plan: ChatPlan, body: Mapping[str, Any], ctx: SimContext, fault: Fault | None
) -> AsyncIterator[bytes]:
    """The SSE events of a streamed response, paced; a fault may cut it part-way."""
    out, item_id = EventEncoder(), ("fc_" if plan.tool_call else "msg_") + os.urandom(12).hex()
    snapshot = response_json(plan, body, "in_progress", [])
    yield out.event("response.created", response=snapshot)
    yield out.event("response.in_progress", response=snapshot)
    yield out.event(
        "response.output_item.added",
        output_index=0,
        item=output_item(plan, item_id, "in_progress", ""),
    )
    at = {"item_id": item_id, "output_index": 0}
    call = plan.tool_call
    if call is None:
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield out.event("response.content_part.added", **at, content_index=0, part=part)
    pieces = content.fragments(call.arguments) if call else plan.tokens
    async with aclosing(ctx.pace(pieces, fault)) as groups:
        async for group in groups:
            delta = "".join(group)
            if call is None:
                yield out.event(
                    "response.output_text.delta", **at, content_index=0, delta=delta, logprobs=[]
                )
            else:
                yield out.event("response.function_call_arguments.delta", **at, delta=delta)
    status = _status(plan)
    item = output_item(plan, item_id, "completed" if status == "completed" else "incomplete")
    if call is None:
        text = item["content"][0]["text"]
        yield out.event("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
        yield out.event(
            "response.content_part.done", **at, content_index=0, part=item["content"][0]
        )
    else:
        yield out.event(
            "response.function_call_arguments.done", **at, name=call.name, arguments=call.arguments
        )
    yield out.event("response.output_item.done", output_index=0, item=item)
    kind = "response.completed" if status == "completed" else "response.incomplete"
    yield out.event(kind, response=response_json(plan, body, status, [item]))


async def create_response(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    """`POST /v1/responses`, streamed or not."""
    try:
        check_auth(request)
        body = parse_body(request)
        args = chat_args(chat_body(body))
        fault = ctx.fault(args.model, VENDOR)
        await apply_fault(fault, lambda f, _: fault_error(f, args.model))
        plan = plan_chat(args, ctx)
    except OpenAIError as error:
        return error.response()
    if body.get("stream"):
        return SimStream(response_stream(plan, body, ctx, fault), headers=_headers())
    call = plan.tool_call
    await ctx.pace_whole(content.fragments(call.arguments) if call else plan.tokens, fault)
    status = _status(plan)
    item_id = ("fc_" if call else "msg_") + os.urandom(12).hex()
    item = output_item(plan, item_id, "completed" if status == "completed" else "incomplete")
    return SimResponse.of_json(response_json(plan, body, status, [item]), headers=_headers())
