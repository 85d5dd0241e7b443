"""Adapter for the OpenAI API (and any server speaking its chat-completions protocol).

The canonical request already has the chat-completions shape, so translation is mostly
a matter of dropping what is unset; answers are read into canonical objects so that the
gateway builds one response shape whatever the vendor.
"""

from __future__ import annotations

import operator
import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any

from providers.errors import (
    AuthenticationFailed,
    ContentFiltered,
    ContextLengthExceeded,
    InvalidUpstreamRequest,
    ModelNotFound,
    ModelOverloaded,
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
    refuse_top_k,
)
from providers.http import (
    decode_vectors,
    parse_usage,
    read_json,
    retry_after_seconds,
    token_logprobs,
    with_usage,
)
from providers.openai_audio import OpenAIAudio
from providers.openai_realtime import OpenAIRealtime
from providers.openai_responses import ResponsesWire, responses_only
from providers.types import (
    JSON,
    ChatChoice,
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    ToolCall,
    ToolCallDelta,
    result_of_choices,
)
from providers.upstream import UpstreamError, UpstreamStream
from streams.batched import Batched
from streams.sse import SSEDecoder, SSEEvent
from streams.text_deltas import TextShape

_SENT_AS_IS = (
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "tool_choice",
    "user",
    "response_format",
    "seed",
    "n",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "reasoning_effort",
    "verbosity",
    "service_tier",
    "store",
    "metadata",
    "prediction",
    "audio",
    "web_search_options",
    "moderation",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
)
_SENT_AS_LISTS = ("stop", "tools", "modalities")
# Every parameter sent as is, read in one call (a C loop) rather than a `getattr` each.
_READ_AS_IS = operator.attrgetter(*_SENT_AS_IS)


# -- request out ---------------------------------------------------------------------------


def chat_payload(request: ChatRequest, *, stream: bool) -> JSON:
    """The JSON body of a chat-completions call for `request`: every parameter asked, by
    its own name (the protocol is the canonical one). The length bound goes as
    `max_completion_tokens`, the spelling every current model takes (reasoning models
    refuse `max_tokens`); `parallel_tool_calls` only with tools, as OpenAI requires."""
    payload: JSON = {"model": request.model, "messages": list(request.messages)}
    for name, value in zip(_SENT_AS_IS, _READ_AS_IS(request), strict=True):
        if value is not None:
            payload[name] = value
    for name in _SENT_AS_LISTS:
        value = getattr(request, name)
        if value is not None:
            payload[name] = list(value)
    if request.max_tokens is not None:
        payload["max_completion_tokens"] = request.max_tokens
    if request.parallel_tool_calls is not None and request.tools:
        payload["parallel_tool_calls"] = request.parallel_tool_calls
    if stream:
        payload["stream"] = True
        # Without `include_obfuscation: false` OpenAI pads every chunk with random text,
        # which the gateway would relay and parse per event (it pads its own when asked).
        payload["stream_options"] = {"include_usage": True, "include_obfuscation": False}
    return payload


def embedding_payload(request: EmbeddingRequest) -> JSON:
    """The body of `/embeddings`: the client's token ids when it sent ids, else the text."""
    inputs: list[Any] = (
        list(request.inputs)
        if request.token_inputs is None
        else [list(tokens) for tokens in request.token_inputs]
    )
    payload: JSON = {"model": request.model, "input": inputs}
    if request.dimensions is not None:
        payload["dimensions"] = request.dimensions
    if request.user is not None:
        payload["user"] = request.user
    # base64 halves the bytes on the wire; the gateway re-encodes as its client asked.
    payload["encoding_format"] = "base64"
    return payload


# -- answers in ----------------------------------------------------------------------------


def parse_chat(data: Mapping[str, Any]) -> ChatResult:
    """A chat-completion JSON answer as a `ChatResult`, every choice of it. The common
    answer, one choice, is read straight into the result (no `ChatChoice` made, no sort)."""
    found: Sequence[Any] = data.get("choices") or ()
    answer_id, model = str(data.get("id", "")), str(data.get("model", ""))
    usage = parse_usage(data.get("usage"))
    moderation = data.get("moderation") or None
    if len(found) != 1:
        choices = [parse_choice(choice, n) for n, choice in enumerate(found)]
        return result_of_choices(answer_id, model, choices, usage, moderation)
    choice = found[0]
    message, calls, finish = _message(choice)
    return ChatResult(
        id=answer_id,
        model=model,
        content=message.get("content"),
        finish_reason=finish,
        usage=usage,
        tool_calls=calls,
        logprobs=token_logprobs(choice.get("logprobs")),
        moderation=moderation,
        audio=message.get("audio") or None,
    )


def parse_choice(choice: Mapping[str, Any], position: int) -> ChatChoice:
    """One choice of an answer; `position` stands in for a missing `index`."""
    message, calls, finish = _message(choice)
    return ChatChoice(
        index=int(choice.get("index", position)),
        content=message.get("content"),
        finish_reason=finish,
        tool_calls=calls,
        logprobs=token_logprobs(choice.get("logprobs")),
        audio=message.get("audio") or None,
    )


def _message(choice: Mapping[str, Any]) -> tuple[Mapping[str, Any], tuple[ToolCall, ...], str]:
    """A choice's message, its tool calls and its finish reason (`tool_calls` or `stop`
    when the upstream named none)."""
    message = choice.get("message") or {}
    called = message.get("tool_calls")
    calls = (
        tuple(
            ToolCall(
                id=call.get("id", ""),
                name=call["function"]["name"],
                arguments=call["function"].get("arguments") or "",
            )
            for call in called
        )
        if called
        else ()
    )
    return message, calls, choice.get("finish_reason") or ("tool_calls" if calls else "stop")


def parse_chunks(data: Mapping[str, Any]) -> list[ChatChunk]:
    """One `chat.completion.chunk` as canonical chunks (one per choice it carries, then
    the usage); none when it carries nothing."""
    choices = data.get("choices")
    chunks = [c for choice in choices if (c := _choice_chunk(choice))] if choices else []
    if data.get("moderation"):
        chunks.append(ChatChunk(moderation=data["moderation"]))
    usage = data.get("usage")  # null on every chunk but the last
    return with_usage(chunks, usage) if usage else chunks


def plain_text(data: Any) -> str | None:
    """The text of an event that is nothing but the first choice's plain text delta
    (most events of a stream: no finish, tool call, audio, log-probabilities, usage or
    moderation), "" for such an event without text (the role's); None for any other
    event, which `parse_chunks` reads whole. One look instead of the layers a chunk of
    any shape goes through."""
    if type(data) is not dict or data.get("usage") or data.get("moderation") or "error" in data:
        return None
    choices = data.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("index") or choice.get("finish_reason") is not None:
        return None
    delta = choice.get("delta")
    if choice.get("logprobs") is not None or type(delta) is not dict or delta.get("tool_calls"):
        return None
    if "audio" in delta:  # a spoken answer's piece (its text may be "" beside it)
        return None
    content = delta.get("content")
    return content if type(content) is str else None


def _finishes(chunks: list[ChatChunk | str]) -> bool:
    """Whether a choice ends in `chunks` (a text piece never ends one)."""
    return any(not isinstance(c, str) and c.finish_reason is not None for c in chunks)


def _choice_chunk(choice: Mapping[str, Any]) -> ChatChunk | None:
    """One choice's delta; None when it carries nothing. A plain text delta (one per
    streamed token: no tool call, no log-probabilities, no audio) is made without the
    rest."""
    delta = choice.get("delta") or {}
    content = delta.get("content") or None
    finish = choice.get("finish_reason")
    pieces = delta.get("tool_calls")
    found = choice.get("logprobs")  # null on every chunk unless they were asked for
    audio = delta.get("audio")  # a spoken answer's pieces (the audio modality)
    if not pieces and found is None and not audio:
        if content is None and finish is None:
            return None
        return ChatChunk(content, (), finish, None, int(choice.get("index", 0)))
    calls = tuple(_tool_call_delta(item) for item in pieces) if pieces else ()
    logprobs = None if found is None else token_logprobs(found)
    if content is None and not calls and finish is None and not logprobs and not audio:
        return None
    return ChatChunk(
        content=content,
        tool_calls=calls,
        finish_reason=finish,
        index=int(choice.get("index", 0)),
        logprobs=logprobs,
        audio=audio or None,
    )


def _tool_call_delta(item: Mapping[str, Any]) -> ToolCallDelta:
    function = item.get("function") or {}
    return ToolCallDelta(
        index=int(item.get("index", 0)),
        id=item.get("id"),
        name=function.get("name"),
        arguments=function.get("arguments") or "",
    )


# -- errors --------------------------------------------------------------------------------


def map_openai_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """An OpenAI-style error answer (`{"error": {message, type, param, code}}`) mapped."""
    parsed = read_json(body)
    error = parsed.get("error") if isinstance(parsed, dict) else None
    error = error if isinstance(error, dict) else {}
    message = str(error.get("message") or f"upstream answered HTTP {status}")
    code = error.get("code")
    kind = error.get("type")
    if status in (401, 403):
        return AuthenticationFailed(provider, message)
    if status == 404 or code == "model_not_found":
        return ModelNotFound(provider, message, model=model)
    if code == "context_length_exceeded":
        return _context_length(provider, message, model)
    if code in ("content_filter", "content_policy_violation"):
        return ContentFiltered(provider, message, filter_reason=str(code))
    if status == 429:
        return ModelOverloaded(
            provider, message, model=model, retry_after=retry_after_seconds(headers)
        )
    if status == 503:
        return UpstreamUnavailable(provider, message, retry_after=retry_after_seconds(headers))
    if status == 504:
        return UpstreamTimeout(provider, message, timeout_ms=0)
    if status in (400, 422):
        return InvalidUpstreamRequest(provider, message, param=error.get("param"))
    return UpstreamHTTPError(
        provider,
        message,
        status=status,
        vendor_type=str(kind) if kind else None,
        vendor_code=str(code) if code else None,
    )


# -- the adapter ---------------------------------------------------------------------------


class OpenAIProvider(OpenAIAudio, OpenAIRealtime, ResponsesWire):
    """Chat, embeddings, audio (`providers.openai_audio`) and model listing over the
    OpenAI protocol; the models OpenAI serves only through its Responses API over that
    (`providers.openai_responses`)."""

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_openai_error(self.provider_id, status, body, headers, model)

    async def chat(self, request: ChatRequest) -> ChatResult:
        refuse_top_k(self.provider_id, request.top_k)
        if responses_only(request.model):
            return await self.responses_chat(request)
        data = await self.post_json(
            "/chat/completions", chat_payload(request, stream=False), model=request.model
        )
        return parse_chat(data)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[Batched[ChatChunk]]:
        refuse_top_k(self.provider_id, request.top_k)
        if responses_only(request.model):
            async with self.responses_stream(request) as batched:
                yield batched
            return
        payload = chat_payload(request, stream=True)
        async with (
            self.open_stream("/chat/completions", payload, model=request.model) as resp,
            aclosing(self._batches(resp)) as batches,
        ):
            yield Batched(batches, lambda: resp.complete, ChatChunk)

    async def _batches(
        self, response: UpstreamStream
    ) -> AsyncGenerator[list[ChatChunk | str], None]:
        """The chunks of each network read together (`streams.batched`): one generator
        step per read, not per event, from the socket to the client's write. A plain
        text delta is its text (`Batched`'s text piece), read without a parse once its
        shape is known (`streams.text_deltas`)."""
        decoder, shape = SSEDecoder(), TextShape()
        finished = done = False
        try:
            async for data in response:
                events = decoder.feed(data)
                if not events:
                    continue
                chunks, done, failure = self._read_events(events, done, shape)
                if chunks:
                    finished = finished or _finishes(chunks)
                    yield chunks
                if failure is not None:
                    raise failure
        except UpstreamError as exc:
            broke = f"the upstream stream broke: {type(exc).__name__}"
            raise StreamInterrupted(self.provider_id, broke) from exc
        if not (finished or done):
            raise StreamInterrupted(self.provider_id, "the upstream stream ended before finishing")

    def _read_events(
        self, events: list[SSEEvent], done: bool, shape: TextShape
    ) -> tuple[list[ChatChunk | str], bool, ProviderError | None]:
        """One read's chunks, whether `[DONE]` has come, and the failure an error event
        reported (the chunks before it are still the client's). After `[DONE]` the body
        ends at once: it is read to its end so that the connection goes back to the pool."""
        chunks: list[ChatChunk | str] = []
        for event in events:
            data = event.data
            if done or data == "[DONE]":
                done = True
                continue
            text = shape.text(data)
            if text is not None:  # a plain text delta of the shape learned
                if text:
                    chunks.append(text)
                continue
            try:
                chunks += self._parsed(event, shape)
            except ProviderError as exc:
                return chunks, done, exc
        return chunks, done, None

    def _parsed(self, event: SSEEvent, shape: TextShape) -> list[ChatChunk | str]:
        """An event parsed whole: a plain text delta teaches `shape` its form."""
        data = self.event_json(event)
        text = plain_text(data)
        if text is None:
            return list(self._event_chunks(data))
        shape.learn(event.data, text)
        return [text] if text else []

    def _event_chunks(self, data: Any) -> list[ChatChunk]:
        if not isinstance(data, dict):
            return []
        if "error" in data:
            raise self._stream_error(data)
        return parse_chunks(data)

    def _stream_error(self, data: Mapping[str, Any]) -> ProviderError:
        error = data.get("error") or {}
        message = str(error.get("message") or "the upstream reported an error mid-stream")
        return UpstreamHTTPError(self.provider_id, message, status=502)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        data = await self.post_json("/embeddings", embedding_payload(request), model=request.model)
        return EmbeddingResult(
            model=data.get("model", request.model),
            vectors=decode_vectors(data),
            usage=parse_usage(data.get("usage")),
        )

    async def list_models(self) -> list[str]:
        data = await self.get_json("/models")
        return [str(item["id"]) for item in data.get("data") or () if "id" in item]


# "This model's maximum context length is 128000 tokens. However, your messages resulted
# in 130000 tokens" (older wording: "you requested 130000 tokens").
_CONTEXT_FIGURES = re.compile(
    r"maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens", re.S
)


def _context_length(provider: str, message: str, model: str) -> ContextLengthExceeded:
    """The spec's `max_tokens` (the window) and `requested_tokens`, read from OpenAI's
    message when it gives them (the error body has no fields for them)."""
    found = _CONTEXT_FIGURES.search(message)
    maximum, requested = (int(g) for g in found.groups()) if found else (None, None)
    return ContextLengthExceeded(
        provider, message, model=model, max_tokens=maximum, requested_tokens=requested
    )
