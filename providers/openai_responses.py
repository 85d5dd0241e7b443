"""OpenAI's Responses wire (`POST /v1/responses`), for the models OpenAI serves only there.

OpenAI refuses its Responses-only models (`o3-pro`, `gpt-5.5-pro`, the catalog's
`endpoints: ["responses"]`) on `/chat/completions`, so the OpenAI adapter reaches them
here, over the same upstream client: the canonical (chat-shaped) request goes out as a
Responses request and the answer, whole or as the documented event stream, comes back as
the canonical result or chunks. Everything around the call (routing, fallbacks, limits,
usage, cost, energy and carbon) is the engine's, as for any model, whichever door the
client came through.

Pure functions for the payload out and the answer in, then `ResponsesWire`, which the
OpenAI adapter mixes in. A model without streaming (`o3-pro`, `o1-pro`, `gpt-5-pro`:
OpenAI streams none of them) is asked whole and its answer handed on as one stream.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any

from providers.catalog import load_catalog
from providers.errors import InvalidUpstreamRequest, ProviderError, StreamInterrupted
from providers.http import HttpProvider
from providers.types import (
    JSON,
    ChatChoice,
    ChatChunk,
    ChatRequest,
    ChatResult,
    ToolCall,
    ToolCallDelta,
    result_of_choices,
)
from providers.types.usage import Usage
from providers.upstream import UpstreamStream
from streams.batched import Batched

RESPONSES_PATH = "/responses"

# Chat parameters the Responses API has under the same name.
_SAME_NAME = (
    "temperature",
    "top_p",
    "user",
    "parallel_tool_calls",
    "service_tier",
    "store",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
)
# Chat parameters the Responses API does not take: refused rather than dropped.
_NOT_ON_THIS_WIRE = (
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "prediction",
    "audio",
    "web_search_options",
    "moderation",
    "prompt_cache_options",
)
_FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}


def responses_only(model: str) -> bool:
    """Whether OpenAI serves `model` (an upstream id or a dated snapshot) only through
    `/responses`: the packaged catalog says so (`endpoints`). One set lookup: every
    OpenAI chat call asks."""
    return model in _responses_only_names()


@functools.cache
def _responses_only_names() -> frozenset[str]:
    return frozenset(
        name
        for m in load_catalog().models(provider="openai")
        if not m.served_on("chat_completions")
        for name in (m.id, m.upstream_id, *m.aliases)
    )


def streams(model: str) -> bool:
    """Whether OpenAI streams `model`'s answers (the catalog's `streaming` capability)."""
    info = load_catalog().model(model)
    return info is None or info.has("streaming")


# -- request out ---------------------------------------------------------------------------


def responses_payload(provider: str, request: ChatRequest, *, stream: bool) -> JSON:
    """The JSON body of a Responses call for `request`; a parameter the wire cannot
    carry is `InvalidUpstreamRequest` naming it (a 400), never dropped in silence."""
    _refuse_foreign(provider, request)
    payload: JSON = {"model": request.model, "input": input_items(request.messages)}
    for name in _SAME_NAME:
        value = getattr(request, name)
        if value is not None:
            payload[name] = value
    if request.max_tokens is not None:
        payload["max_output_tokens"] = request.max_tokens
    if request.reasoning_effort is not None:
        payload["reasoning"] = {"effort": request.reasoning_effort}
    text = _text_options(request)
    if text:
        payload["text"] = text
    if request.tools:
        payload["tools"] = [_tool(t) for t in request.tools]
    if request.tool_choice is not None:
        payload["tool_choice"] = _tool_choice(request.tool_choice)
    if stream:
        payload["stream"] = True
    return payload


def _refuse_foreign(provider: str, request: ChatRequest) -> None:
    for name in _NOT_ON_THIS_WIRE:
        value = getattr(request, name)
        if value is not None:
            raise InvalidUpstreamRequest(
                provider,
                f"'{name}' is not supported by '{request.model}', which OpenAI serves only "
                "through its Responses API.",
                param=name,
                value=value,
            )
    if request.n not in (None, 1):
        raise InvalidUpstreamRequest(
            provider, f"'{request.model}' gives one answer a request (n).", param="n"
        )
    if request.modalities is not None and list(request.modalities) != ["text"]:
        raise InvalidUpstreamRequest(
            provider, f"'{request.model}' answers in text only.", param="modalities"
        )


def _text_options(request: ChatRequest) -> JSON:
    text: JSON = {}
    form = request.response_format
    if form is not None and form.get("type") == "json_schema":
        text["format"] = {"type": "json_schema", **(form.get("json_schema") or {})}
    elif form is not None and form.get("type") in ("json_object", "text"):
        text["format"] = {"type": form["type"]}
    if request.verbosity is not None:
        text["verbosity"] = request.verbosity
    return text


def _tool(tool: Mapping[str, Any]) -> JSON:
    """A chat function tool (`{type, function: {...}}`) in the Responses shape (flat)."""
    function = tool.get("function") or {}
    return {"type": "function", **function}


def _tool_choice(choice: str | Mapping[str, Any]) -> Any:
    if isinstance(choice, str):
        return choice
    return {"type": "function", "name": (choice.get("function") or {}).get("name")}


def input_items(messages: Sequence[Mapping[str, Any]]) -> list[JSON]:
    """Chat messages as Responses input items: messages, an assistant's tool calls as
    `function_call` items, tool results as `function_call_output` items."""
    items: list[JSON] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            output = _plain_text(message.get("content"))
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": output,
                }
            )
            continue
        content = message.get("content")
        if content:
            items.append({"type": "message", "role": role, "content": _parts(role, content)})
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": function.get("arguments") or "",
                }
            )
    return items


def _parts(role: Any, content: Any) -> Any:
    """A message's content: a string as it is; parts in the Responses names."""
    if isinstance(content, str):
        return content
    return [_part(role, part) for part in content if isinstance(part, Mapping)]


def _part(role: Any, part: Mapping[str, Any]) -> JSON:
    kind = part.get("type")
    if kind == "text":
        text_type = "output_text" if role == "assistant" else "input_text"
        return {"type": text_type, "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url") or {}
        url = image.get("url") if isinstance(image, Mapping) else image
        found: JSON = {"type": "input_image", "image_url": url}
        if isinstance(image, Mapping) and image.get("detail"):
            found["detail"] = image["detail"]
        return found
    if kind == "file":
        file = part.get("file") or {}
        return {"type": "input_file", **{k: v for k, v in file.items() if v is not None}}
    if kind == "refusal":
        return {"type": "refusal", "refusal": part.get("refusal", "")}
    return dict(part)


def _plain_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else ()
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))


# -- answers in ----------------------------------------------------------------------------


def parse_response(data: Mapping[str, Any]) -> ChatResult:
    """A response object as a `ChatResult`: its `message` items' text, a tool call per
    `function_call` item (reasoning items are the model's own and stay out)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in data.get("output") or ():
        if item.get("type") == "message":
            texts += [p.get("text", "") for p in item.get("content") or () if _is_text(p)]
        elif item.get("type") == "function_call":
            calls.append(
                ToolCall(
                    id=str(item.get("call_id") or item.get("id") or ""),
                    name=str(item.get("name") or ""),
                    arguments=str(item.get("arguments") or ""),
                )
            )
    choice = ChatChoice(
        index=0,
        content="".join(texts) if texts or not calls else None,
        finish_reason=finish_reason(data, bool(calls)),
        tool_calls=tuple(calls),
    )
    return result_of_choices(
        str(data.get("id", "")), str(data.get("model", "")), [choice], usage_of(data), None
    )


def _is_text(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "output_text"


def finish_reason(data: Mapping[str, Any], called: bool) -> str:
    """Chat's finish reason for a finished response: cut (`length`), filtered, tools, stop."""
    if data.get("status") == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason")
        return _FINISH.get(str(reason), "length")
    return "tool_calls" if called else "stop"


def usage_of(data: Mapping[str, Any]) -> Usage:
    usage = data.get("usage") or {}
    return Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))


class EventReader:
    """The canonical chunks of one response's events, in order. A function call's
    deltas name it by its item's place among the calls (chat's tool-call `index`)."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._calls: dict[int, int] = {}  # output_index -> tool call index
        self.finished = False

    def chunks(self, data: Any) -> list[ChatChunk]:
        kind = data.get("type") if isinstance(data, Mapping) else None
        if kind == "response.output_text.delta":
            return [ChatChunk(str(data.get("delta") or ""))] if data.get("delta") else []
        if kind == "response.output_item.added":
            return self._call_opened(data)
        if kind == "response.function_call_arguments.delta":
            return self._call_delta(data)
        if kind in ("response.completed", "response.incomplete"):
            return self._finished(data.get("response") or {})
        if kind in ("response.failed", "error"):
            raise self._failure(data)
        return []

    def _call_opened(self, data: Mapping[str, Any]) -> list[ChatChunk]:
        item = data.get("item") or {}
        if item.get("type") != "function_call":
            return []
        index = self._calls.setdefault(int(data.get("output_index", 0)), len(self._calls))
        opened = ToolCallDelta(
            index=index, id=item.get("call_id"), name=item.get("name"), arguments=""
        )
        return [ChatChunk(tool_calls=(opened,))]

    def _call_delta(self, data: Mapping[str, Any]) -> list[ChatChunk]:
        index = self._calls.get(int(data.get("output_index", 0)), 0)
        delta = ToolCallDelta(index=index, id=None, name=None, arguments=str(data.get("delta")))
        return [ChatChunk(tool_calls=(delta,))]

    def _finished(self, response: Mapping[str, Any]) -> list[ChatChunk]:
        self.finished = True
        reason = finish_reason(response, bool(self._calls))
        return [ChatChunk(finish_reason=reason, usage=usage_of(response))]

    def _failure(self, data: Mapping[str, Any]) -> ProviderError:
        error = (data.get("response") or {}).get("error") or data.get("error") or data
        message = str(error.get("message") or "the upstream response failed mid-stream")
        return StreamInterrupted(self._provider, message)


def result_chunks(result: ChatResult) -> list[ChatChunk]:
    """A whole answer as the chunks of a stream that carried it at once."""
    choice = result.choices[0]
    calls = tuple(
        ToolCallDelta(index=n, id=call.id, name=call.name, arguments=call.arguments)
        for n, call in enumerate(choice.tool_calls)
    )
    first = ChatChunk(content=choice.content or None, tool_calls=calls)
    last = ChatChunk(finish_reason=choice.finish_reason, usage=result.usage)
    return [first, last] if first.content or calls else [last]


# -- the adapter's side --------------------------------------------------------------------


class ResponsesWire(HttpProvider):
    """The Responses calls of the OpenAI adapter (which mixes this in)."""

    async def responses_chat(self, request: ChatRequest) -> ChatResult:
        payload = responses_payload(self.provider_id, request, stream=False)
        data = await self.post_json(RESPONSES_PATH, payload, model=request.model)
        return parse_response(data)

    @asynccontextmanager
    async def responses_stream(self, request: ChatRequest) -> AsyncIterator[Batched[ChatChunk]]:
        """A streamed answer; a model OpenAI does not stream is asked whole, and its
        answer is the stream's one batch (in hand at once)."""
        if not streams(request.model):
            result = await self.responses_chat(request)
            async with aclosing(_one_batch(result_chunks(result))) as batches:
                yield Batched(batches, lambda: True)
            return
        payload = responses_payload(self.provider_id, request, stream=True)
        async with (
            self.open_stream(RESPONSES_PATH, payload, model=request.model) as resp,
            aclosing(self._response_batches(resp)) as batches,
        ):
            yield Batched(batches, lambda: resp.complete)

    async def _response_batches(
        self, response: UpstreamStream
    ) -> AsyncGenerator[list[ChatChunk], None]:
        reader = EventReader(self.provider_id)
        async with aclosing(self.sse_batches(response)) as batches:
            async for events in batches:
                chunks: list[ChatChunk] = []
                try:
                    for event in events:
                        chunks += reader.chunks(self.event_json(event))
                finally:  # the chunks before a failure are still the client's
                    if chunks:
                        yield chunks
        if not reader.finished:
            raise StreamInterrupted(self.provider_id, "the upstream stream ended before finishing")


async def _one_batch(chunks: list[ChatChunk]) -> AsyncGenerator[list[ChatChunk], None]:
    yield chunks
