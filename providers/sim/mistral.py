"""Simulated Mistral La Plateforme: chat completions (JSON and SSE, tools), embeddings, models.

The wire format is OpenAI-like but not OpenAI's, and this module keeps the differences a
client notices: unknown body fields are refused with a 422 `{"detail": [...]}` (as
Mistral's validator does), `tool_choice` accepts `any`, tool call ids are 9 alphanumeric
characters, a streamed tool call arrives whole in one delta, usage rides on the last chunk
without being asked for, and errors are Mistral's flat `{"object": "error", ...}` bodies
(or the API gateway's bare `{"message": ...}` for 401). Only the message-text reading is
shared with the OpenAI simulator; the content itself comes from `content`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import attrs

from providers.sim import content
from providers.sim.catalog_models import merged
from providers.sim.content import ChatPlan
from providers.sim.core import Fault, Route, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import MODEL_LIST, apply_fault
from providers.sim.openai import message_text
from providers.types import ToolCall
from streams.sse import DONE, encode_data

VENDOR = "mistral"
CONTEXT_LIMIT = 128_000
EMBED_SIZES = {"mistral-embed": 1024, "codestral-embed": 1536}
MAX_EMBED_DIMENSION = 3072
MODEL_CREATED = 1_725_000_000
MODELS = merged(
    (
        "mistral-large-latest",
        "mistral-medium-latest",
        "mistral-small-latest",
        "ministral-8b-latest",
        "codestral-latest",
        "open-mistral-nemo",
        "mistral-embed",
        "codestral-embed",
    ),
    "mistral",
)
CHAT_FIELDS = frozenset(
    {
        "model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop",
        "random_seed", "metadata", "response_format", "tools", "tool_choice",
        "presence_penalty", "frequency_penalty", "n", "prediction", "parallel_tool_calls",
        "prompt_mode", "safe_prompt", "min_tokens", "reasoning_effort", "guardrails",
        "logprobs", "top_logprobs", "prompt_cache_key", "service_tier", "top_k",
        "repetition_penalty", "prompt_logprobs", "top_prompt_logprobs",
    }
)  # fmt: skip
EMBED_FIELDS = frozenset(
    {"model", "input", "metadata", "output_dimension", "output_dtype", "encoding_format"}
)
_ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_COMPACT = (",", ":")
_CALL_ID = re.compile(r"[A-Za-z0-9]{9}")
_FAULT_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request"),
    404: ("invalid_request_error", None, "Not Found"),
    429: ("rate_limited", "1300", "Rate limit exceeded"),
    500: ("internal_server_error", "3000", "Internal server error"),
    503: ("service_unavailable", "3001", "Service unavailable, please retry later"),
}


class MistralError(Exception):
    """An error answer in one of Mistral's shapes; `body` is sent as is."""

    def __init__(self, status: int, body: Mapping[str, Any]) -> None:
        super().__init__(str(body))
        self.status = status
        self.body = body

    def response(self) -> SimResponse:
        return SimResponse.of_json(self.body, status=self.status)


def api_error(
    status: int, message: str, kind: str = "invalid_request_error", code: str | None = None
) -> MistralError:
    body = {"object": "error", "message": message, "type": kind, "param": None, "code": code}
    return MistralError(status, body)


def validation_error(kind: str, location: Sequence[str | int], message: str) -> MistralError:
    """A 422 from the request validator, in pydantic's shape."""
    detail = {"type": kind, "loc": ["body", *location], "msg": message, "input": None}
    return MistralError(422, {"detail": [detail]})


def unauthorized() -> MistralError:
    return MistralError(401, {"message": "Unauthorized", "request_id": os.urandom(16).hex()})


def invalid_model(model: str) -> MistralError:
    return api_error(400, f"Invalid model: {model}", "invalid_model", "1500")


def fault_error(fault: Fault) -> MistralError:
    """The answer a status fault produces, shaped as Mistral shapes that status."""
    status = fault.status or 500
    if status == 401:
        return unauthorized()
    if status == 422:
        return validation_error(fault.code or "value_error", [], fault.message or "Invalid input")
    kind, code, message = _FAULT_ERRORS.get(
        status,
        ("internal_server_error" if status >= 500 else "invalid_request_error", None, "Error"),
    )
    return api_error(status, fault.message or message, kind, fault.code or code)


def check_auth(request: SimRequest) -> None:
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise unauthorized()


def parse_body(request: SimRequest, allowed: frozenset[str]) -> dict[str, Any]:
    """The JSON body, refusing what Mistral's validator refuses (bad JSON, extra fields)."""
    try:
        body = request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise validation_error("json_invalid", [], "JSON decode error")
    extra = sorted(set(body) - allowed)
    if extra:
        raise validation_error("extra_forbidden", [extra[0]], "Extra inputs are not permitted")
    return body


def check_model(body: Mapping[str, Any]) -> str:
    """The model; ids starting with `unknown` do not exist, as in every simulated vendor."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise validation_error("missing", ["model"], "Field required")
    if model.startswith("unknown"):
        raise invalid_model(model)
    return model


def call_id(seed: str) -> str:
    """A Mistral tool call id: 9 characters of [A-Za-z0-9], stable for a given seed."""
    digest = hashlib.sha256(("mistral\x00" + seed).encode()).digest()
    return "".join(_ALPHANUMERIC[byte % len(_ALPHANUMERIC)] for byte in digest[:9])


def usage_json(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


# --- chat completions ------------------------------------------------------------


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    if messages is None:
        raise validation_error("missing", ["messages"], "Field required")
    if not isinstance(messages, list) or not messages:
        raise api_error(400, "Messages must not be empty")
    return [m if isinstance(m, dict) else {} for m in messages]


def _check_call_ids(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse tool call ids that are not 9 alphanumeric characters, as Mistral does."""
    for message in messages:
        ids = [call.get("id") for call in message.get("tool_calls") or () if isinstance(call, dict)]
        if message.get("role") == "tool":
            ids.append(message.get("tool_call_id"))
        for value in ids:
            if value is not None and not _CALL_ID.fullmatch(str(value)):
                raise api_error(
                    400,
                    f"Tool call id was {value} but must be a-z, A-Z, 0-9, with a length of 9.",
                    code="3280",
                )


def _max_tokens(body: Mapping[str, Any]) -> int | None:
    value = body.get("max_tokens")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise validation_error("int_type", ["max_tokens"], "Input should be a valid integer")
    return value


def _tools(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tools = body.get("tools") or []
    for position, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise validation_error("missing", ["tools", position, "function"], "Field required")
        if "parameters" not in function:
            location: list[str | int] = ["tools", position, "function", "parameters"]
            raise validation_error("missing", location, "Field required")
    return list(tools)


def _tool_choice(body: Mapping[str, Any]) -> str | Mapping[str, Any] | None:
    """The choice in the shared vocabulary of `content`: Mistral's `any` is `required`."""
    choice = body.get("tool_choice")
    if choice in ("any", "required"):
        return "required"
    if choice is None or choice in ("auto", "none") or isinstance(choice, dict):
        return choice
    raise validation_error("enum", ["tool_choice"], "Input should be 'auto', 'none' or 'any'")


def chunk_notes(messages: Sequence[Any]) -> list[str]:
    """What the messages attach, in Mistral's chunks: each `document_url` by its name,
    each `input_audio` as audio. The OpenAI-shaped `file` part is Mistral's 422."""
    notes: list[str] = []
    for message in messages:
        chunks = message.get("content") if isinstance(message, dict) else None
        for chunk in chunks if isinstance(chunks, list) else ():
            kind = chunk.get("type") if isinstance(chunk, dict) else None
            if kind == "file" or (kind == "document_url" and not _is_str(chunk, kind)):
                raise validation_error(
                    "union_tag_invalid",
                    ["messages", "content"],
                    f"Input tag '{kind}' found using 'type' does not match the expected tags",
                )
            if kind == "document_url":
                notes.append(f"document {chunk.get('document_name') or 'url'}")
            elif kind == "input_audio" and _is_str(chunk, kind):
                notes.append("audio")
    return notes


def _is_str(chunk: Mapping[str, Any], field: str) -> bool:
    return isinstance(chunk.get(field), str)


def plan_chat(body: Mapping[str, Any], ctx: SimContext) -> ChatPlan:
    """Validate the request and decide the whole answer."""
    model = check_model(body)
    messages = _messages(body)
    _check_call_ids(messages)
    tools, choice, max_tokens = _tools(body), _tool_choice(body), _max_tokens(body)
    texts = [message_text(message) for message in messages]
    prompt = "\n".join(texts)
    prompt_tokens = content.count_prompt_tokens(texts)
    if tools:
        prompt_tokens += content.count_tokens(json.dumps(tools))
    if prompt_tokens > CONTEXT_LIMIT:
        raise api_error(
            400,
            f"Prompt contains {prompt_tokens} tokens and 0 draft tokens, too large for model "
            f"with {CONTEXT_LIMIT} maximum context length",
        )
    first, *more = (
        _plan_choice(body, ctx, content.choice_prompt(prompt, i), i, (tools, choice, max_tokens))
        for i in range(_choices(body))
    )
    return ChatPlan(
        id=os.urandom(16).hex(),
        model=model,
        created=int(time.time()),
        prompt_tokens=prompt_tokens,
        tokens=first.tokens,
        tool_call=first.tool_call,
        finish_reason=first.finish_reason,
        logprobs=first.logprobs,
        more_choices=tuple(more),
    )


def _choices(body: Mapping[str, Any]) -> int:
    n = body.get("n")
    if n is None:
        return 1
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise validation_error("greater_than_equal", ["n"], "Input should be greater than 0")
    return n


def _plan_choice(
    body: Mapping[str, Any],
    ctx: SimContext,
    prompt: str,
    index: int,
    asked: tuple[Sequence[Mapping[str, Any]], Any, int | None],
) -> content.ChoicePlan:
    tools, choice, max_tokens = asked
    last_role = (body.get("messages") or [{}])[-1].get("role")
    tool_call = _tool_call(tools, choice, last_role, prompt)
    schema = content.response_format_schema(body.get("response_format"))
    tokens = [] if tool_call else ctx.reply_tokens(prompt, max_tokens, schema)
    if tokens:
        tokens = content.received(chunk_notes(body.get("messages") or ())) + tokens
    tokens, stopped = content.cut_at_stop(tokens, content.stop_sequences(body.get("stop")))
    finish = "tool_calls" if tool_call else "length" if max_tokens and not stopped else "stop"
    logprobs = None
    if body.get("logprobs") and tool_call is None:
        logprobs = [
            {**entry, "token_id": position}
            for position, entry in enumerate(
                content.token_logprobs(tokens, int(body.get("top_logprobs") or 0))
            )
        ]
    return content.ChoicePlan(index, tokens, tool_call, finish, logprobs)


def _tool_call(
    tools: Sequence[Mapping[str, Any]],
    choice: str | Mapping[str, Any] | None,
    last_role: str | None,
    prompt: str,
) -> ToolCall | None:
    if not content.wants_tool_call(tools, choice, last_role):
        return None
    function = content.pick_tool(tools, choice, prompt)
    if function is None:
        raise api_error(400, "Function name in tool_choice was not found in tools")
    call = content.plan_tool_call(function, prompt)
    return attrs.evolve(call, id=call_id(call.id))


def _tool_call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
        "index": 0,
    }


def completion_json(plan: ChatPlan) -> dict[str, Any]:
    """A non-streamed answer, as `chat.complete` parses it."""
    return {
        "id": plan.id,
        "object": "chat.completion",
        "model": plan.model,
        "usage": usage_json(plan.prompt_tokens, plan.completion_tokens),
        "created": plan.created,
        "choices": [_choice_json(choice) for choice in plan.choices],
    }


def _choice_json(choice: content.ChoicePlan) -> dict[str, Any]:
    call = choice.tool_call
    message = {
        "role": "assistant",
        "content": "" if call else "".join(choice.tokens),
        "tool_calls": [_tool_call_json(call)] if call else None,
        "prefix": False,
    }
    answer: dict[str, Any] = {
        "index": choice.index,
        "message": message,
        "finish_reason": choice.finish_reason,
    }
    if choice.logprobs is not None:
        answer["logprobs"] = {"content": choice.logprobs}
    return answer


def chunk_event(
    plan: ChatPlan,
    delta: Mapping[str, Any],
    finish: str | None = None,
    *,
    index: int = 0,
    logprobs: list[dict[str, Any]] | None = None,
    last: bool = False,
) -> bytes:
    """One SSE event; the last one carries the usage, as Mistral sends it."""
    choice: dict[str, Any] = {"index": index, "delta": delta, "finish_reason": finish}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    chunk: dict[str, Any] = {
        "id": plan.id,
        "object": "chat.completion.chunk",
        "created": plan.created,
        "model": plan.model,
        "choices": [choice],
    }
    if last:
        chunk["usage"] = usage_json(plan.prompt_tokens, plan.completion_tokens)
    return encode_data(json.dumps(chunk, separators=_COMPACT))


async def chat_stream(plan: ChatPlan, ctx: SimContext, fault: Fault | None) -> AsyncIterator[bytes]:
    """The SSE events of a streamed answer, paced; ends with `data: [DONE]`.

    Each choice in turn: the role chunk comes with its first paced group; a tool call
    comes whole in one delta. The last choice's finishing event carries the usage. A
    fault may stall or cut (`StreamCut`) the stream part-way.
    """
    choices = plan.choices
    for choice in choices:
        async with aclosing(_choice_events(plan, choice, ctx, fault)) as events:
            async for event in events:
                yield event
        last = choice.index == choices[-1].index
        yield chunk_event(
            plan, {"content": ""}, choice.finish_reason, index=choice.index, last=last
        )
    yield DONE


async def _choice_events(
    plan: ChatPlan, choice: content.ChoicePlan, ctx: SimContext, fault: Fault | None
) -> AsyncGenerator[bytes]:
    call, index = choice.tool_call, choice.index
    pieces = [call.arguments] if call else choice.tokens
    sent = 0
    async with aclosing(ctx.pace(pieces, fault)) as groups:
        async for group in groups:
            if not sent:
                yield chunk_event(plan, {"role": "assistant", "content": ""}, index=index)
            if call is not None:
                delta = {"content": "", "tool_calls": [_tool_call_json(call)]}
                yield chunk_event(plan, delta, index=index)
            else:
                logprobs = (
                    None if choice.logprobs is None else choice.logprobs[sent : sent + len(group)]
                )
                yield chunk_event(plan, {"content": "".join(group)}, index=index, logprobs=logprobs)
            sent += len(group)


async def chat_completions(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    """`POST /v1/chat/completions`, streamed or not."""
    try:
        check_auth(request)
        body = parse_body(request, CHAT_FIELDS)
        fault = ctx.fault(check_model(body), VENDOR)
        await apply_fault(fault, lambda f, _: fault_error(f))
        plan = plan_chat(body, ctx)
    except MistralError as error:
        return error.response()
    if body.get("stream"):
        return SimStream(chat_stream(plan, ctx, fault))
    async with aclosing(ctx.pace(plan.tokens or [""], fault)) as groups:
        async for _ in groups:
            pass  # a whole answer takes as long as its stream would
    return SimResponse.of_json(completion_json(plan))


# --- embeddings --------------------------------------------------------------------


def embed_inputs(value: Any) -> list[str]:
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise validation_error("list_type", ["input"], "Input should be a valid list of strings")
    if not all(texts):
        raise api_error(400, "Input must not contain empty strings")
    return texts


def embed_size(model: str, requested: Any) -> int:
    """mistral-embed is 1024 wide and fixed; codestral-embed 1536, or `output_dimension`."""
    if requested is None:
        return EMBED_SIZES.get(model, EMBED_SIZES["mistral-embed"])
    if not model.startswith("codestral-embed"):
        raise api_error(400, f"Model {model} does not support output_dimension")
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise validation_error("int_type", ["output_dimension"], "Input should be an integer")
    if not 0 < requested <= MAX_EMBED_DIMENSION:
        raise api_error(400, f"output_dimension must be between 1 and {MAX_EMBED_DIMENSION}")
    return requested


async def embeddings(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`POST /v1/embeddings`: one deterministic unit vector per input, as floats."""
    try:
        check_auth(request)
        body = parse_body(request, EMBED_FIELDS)
        model = check_model(body)
        texts = embed_inputs(body.get("input"))
        size = embed_size(model, body.get("output_dimension"))
        await apply_fault(ctx.fault(model, VENDOR), lambda f, _: fault_error(f))
    except MistralError as error:
        return error.response()
    tokens = sum(content.count_tokens(text) for text in texts)
    data = [
        {"object": "embedding", "embedding": content.embedding(text, size), "index": index}
        for index, text in enumerate(texts)
    ]
    payload = {
        "id": os.urandom(16).hex(),
        "object": "list",
        "data": data,
        "model": model,
        "usage": usage_json(tokens, 0),
    }
    return SimResponse.of_json(payload)


# --- models ------------------------------------------------------------------------


def model_card(model: str) -> dict[str, Any]:
    embed = "embed" in model
    capabilities = {
        "completion_chat": not embed,
        "function_calling": not embed,
        "completion_fim": model.startswith("codestral") and not embed,
        "fine_tuning": False,
        "vision": False,
        "classification": False,
    }
    return {
        "id": model,
        "object": "model",
        "created": MODEL_CREATED,
        "owned_by": "mistralai",
        "capabilities": capabilities,
        "name": model,
        "description": f"Simulated {model}",
        "max_context_length": 8192 if embed else CONTEXT_LIMIT,
        "aliases": [],
        "deprecation": None,
        "default_model_temperature": None if embed else 0.3,
        "type": "base",
    }


async def list_models(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`GET /v1/models`; obeys the faults naming `MODEL_LIST` (the gateway's probes)."""
    try:
        check_auth(request)
        await apply_fault(ctx.fault(MODEL_LIST, VENDOR), lambda f, _: fault_error(f))
    except MistralError as error:
        return error.response()
    return SimResponse.of_json({"object": "list", "data": [model_card(m) for m in MODELS]})


async def ocr(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`POST /v1/ocr`, served by `providers.sim.mistral_ocr` (imported here, at call time,
    because that module builds on this one's errors and checks)."""
    from providers.sim.mistral_ocr import serve_ocr

    return await serve_ocr(request, ctx)


ROUTES: list[Route] = [
    Route("POST", "/v1/chat/completions", chat_completions),
    Route("POST", "/v1/ocr", ocr),
    Route("POST", "/v1/embeddings", embeddings),
    Route("GET", "/v1/models", list_models),
]
