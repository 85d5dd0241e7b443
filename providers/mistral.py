"""Adapter for Mistral's La Plateforme API (`/v1/chat/completions`, `/v1/embeddings`).

Mistral's chat protocol is close to OpenAI's, so usage, vectors and `Retry-After` are read
with `providers.openai`'s functions. What differs, and is translated here:

- requests: `random_seed` instead of `seed`; no `user`, `stream_options` or message
  `name` outside tool messages (Mistral rejects unknown fields with 422); `tool_choice`
  `required` is spelt `any`; every function must have `parameters`; tool call ids must
  be 9 alphanumeric characters;
- answers: content may be a list of chunks (text, thinking); tool arguments may arrive as
  an object; finish reasons include `model_length` and `error`; a streamed tool call
  comes whole in one delta, and the usage rides on the last chunk;
- errors: a flat `{"object": "error", "message", "type", "param", "code"}` body, a bare
  `{"message": ...}` from the API gateway (401, 429), or a 422 `{"detail": [...]}`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any

import attrs

from providers import content_parts
from providers.audio_types import TranscriptEvent, TranscriptionRequest, TranscriptionResult
from providers.errors import (
    AuthenticationFailed,
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
    HttpProvider,
    decode_vectors,
    parse_usage,
    read_json,
    retry_after_seconds,
    token_logprobs,
    with_usage,
)
from providers.mistral_audio import MistralAudio
from providers.mistral_live import MistralLive, is_live_model
from providers.mistral_ocr import ocr_payload, parse_ocr
from providers.ocr_types import OcrRequest, OcrResult
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
from streams.batched import Batched
from streams.sse import SSEEvent

_PASSED_FIELDS = (
    "temperature",
    "max_tokens",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
    "n",
    "logprobs",
    "top_logprobs",
    "prediction",
    "reasoning_effort",
    "metadata",
    "prompt_cache_key",
)
SERVICE_TIERS = {"auto": "auto", "default": "standard_only"}
_FINISH_REASONS = {"model_length": "length"}
_CALL_ID = re.compile(r"[A-Za-z0-9]{9}")
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_CONTEXT = re.compile(
    r"contains (\d+) tokens.*?too large for model with (\d+) maximum context length", re.S
)
_EMPTY_PARAMETERS: JSON = {"type": "object", "properties": {}}


# -- request out ---------------------------------------------------------------------------


def chat_payload(request: ChatRequest, *, stream: bool) -> JSON:
    """The JSON body of a Mistral chat call for `request`.

    Mistral has no `user` or `safety_identifier` field and refuses unknown ones: the
    gateway records the end user itself. Usage comes in the last stream chunk without
    asking, so no `stream_options` either. `service_tier` default is `standard_only`.
    """
    payload: JSON = {
        "model": request.model,
        "messages": [mistral_message(message) for message in request.messages],
    }
    for name in _PASSED_FIELDS:
        value = getattr(request, name)
        if value is not None:
            payload[name] = value
    if request.stop is not None:
        payload["stop"] = list(request.stop)
    if request.seed is not None:
        payload["random_seed"] = request.seed
    if request.tools:
        payload["tools"] = [mistral_tool(tool) for tool in request.tools]
    if request.tool_choice is not None:
        payload["tool_choice"] = mistral_tool_choice(request.tool_choice)
    if request.tools and request.parallel_tool_calls is not None:
        payload["parallel_tool_calls"] = request.parallel_tool_calls
    if request.service_tier in SERVICE_TIERS:
        payload["service_tier"] = SERVICE_TIERS[request.service_tier]
    payload["stream"] = stream
    return payload


def mistral_message(message: Mapping[str, Any]) -> JSON:
    """A chat-completions message in Mistral's shape (ids remapped, `name` only on tools)."""
    out = dict(message)
    role = out.get("role")
    if role != "tool":
        out.pop("name", None)
    if out.get("tool_calls"):
        out["tool_calls"] = [_mistral_call(call) for call in out["tool_calls"]]
        if out.get("content") is None:
            out.pop("content", None)
    if role == "tool" and out.get("tool_call_id"):
        out["tool_call_id"] = mistral_call_id(str(out["tool_call_id"]))
    if isinstance(out.get("content"), list):
        out["content"] = [mistral_chunk(part) for part in out["content"]]
    return out


def mistral_chunk(part: Mapping[str, Any]) -> JSON:
    """A content part as Mistral's chunk: a document as `document_url` (a `data:` URL; a
    text file as its text, an image as `image_url`), audio as `input_audio` (its base64,
    for the Voxtral models); text and images as they are."""
    kind = part.get("type")
    if kind == "input_audio":
        return {"type": "input_audio", "input_audio": content_parts.audio(part)[1]}
    if kind != "file":
        return dict(part)
    doc = content_parts.document(part)
    if doc.is_text:
        return {"type": "text", "text": content_parts.decoded_text(doc.data)}
    if doc.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": doc.data_url}
    chunk: JSON = {"type": "document_url", "document_url": doc.data_url}
    if doc.filename:
        chunk["document_name"] = doc.filename
    return chunk


def _mistral_call(call: Mapping[str, Any]) -> JSON:
    return {**call, "id": mistral_call_id(str(call.get("id") or "")), "type": "function"}


def mistral_call_id(call_id: str) -> str:
    """A tool call id Mistral accepts: 9 characters from [A-Za-z0-9].

    Ids minted elsewhere (OpenAI's `call_...`, Anthropic's `toolu_...`) are hashed to 9
    characters, the same way for the assistant's call and the tool's answer, so a
    conversation begun on another vendor can continue on Mistral. Valid ids pass as is.
    """
    if _CALL_ID.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode()).digest()[:8], "big")
    chars = []
    for _ in range(9):
        number, digit = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return "".join(chars)


def mistral_tool(tool: Mapping[str, Any]) -> JSON:
    """A tool definition; Mistral requires `parameters`, so a function without any gets an
    empty object schema."""
    function = dict(tool.get("function") or {})
    function.setdefault("parameters", _EMPTY_PARAMETERS)
    return {"type": "function", "function": function}


def mistral_tool_choice(choice: str | Mapping[str, Any]) -> str | JSON:
    """`required` is Mistral's `any`; `auto`, `none` and a named function are the same."""
    if choice == "required":
        return "any"
    if isinstance(choice, str):
        return choice
    return dict(choice)


def embedding_payload(request: EmbeddingRequest) -> JSON:
    """The body of `/v1/embeddings`: floats (the SDK's own shape); `dimensions` becomes
    `output_dimension`, which only some models (codestral-embed) accept; `user` is dropped."""
    payload: JSON = {"model": request.model, "input": list(request.inputs)}
    if request.dimensions is not None:
        payload["output_dimension"] = request.dimensions
    return payload


# -- answers in ----------------------------------------------------------------------------


def text_of(content: Any) -> str | None:
    """The visible text of a message content: a string, or the `text` chunks of a list
    (thinking and other chunks are not part of the answer)."""
    if content is None or isinstance(content, str):
        return content
    parts = [
        str(chunk.get("text") or "")
        for chunk in content
        if isinstance(chunk, Mapping) and chunk.get("type", "text") == "text"
    ]
    return "".join(parts)


def arguments_text(arguments: Any) -> str:
    """Tool arguments as a JSON string; Mistral may send them as an object."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, separators=(",", ":"))


def canonical_finish(reason: str | None) -> str | None:
    """Mistral's finish reason in canonical terms; `model_length` is the context running
    out, which a client reads as `length`. `error` is left for the caller to raise."""
    if reason is None:
        return None
    return _FINISH_REASONS.get(reason, reason)


def parse_chat(data: Mapping[str, Any], provider: str = "mistral") -> ChatResult:
    """A chat answer as a `ChatResult`, every choice of it; a choice finished by `error`
    is raised."""
    choices = [_choice(choice, n, provider) for n, choice in enumerate(data.get("choices") or ())]
    return result_of_choices(
        str(data.get("id") or ""),
        str(data.get("model") or ""),
        choices,
        parse_usage(data.get("usage")),
    )


def _choice(choice: Mapping[str, Any], position: int, provider: str) -> ChatChoice:
    message = choice.get("message") or {}
    calls = tuple(
        ToolCall(
            id=str(call.get("id") or ""),
            name=str(call["function"]["name"]),
            arguments=arguments_text(call["function"].get("arguments")),
        )
        for call in message.get("tool_calls") or ()
    )
    finish = canonical_finish(choice.get("finish_reason")) or ("tool_calls" if calls else "stop")
    if finish == "error":
        raise UpstreamHTTPError(provider, "the model failed while generating", status=502)
    return ChatChoice(
        index=int(choice.get("index", position)),
        content=text_of(message.get("content")),
        finish_reason=finish,
        tool_calls=calls,
        logprobs=token_logprobs(choice.get("logprobs")),
    )


@attrs.define
class ChunkReader:
    """Turns Mistral stream chunks into canonical chunks; a pure object, fed one at a time.

    It keeps one piece of state per choice: which canonical index each tool call id got.
    Mistral sends each call whole, with an `index` that is not reliably distinct between
    calls, so a call is numbered by the order its id first appears; a piece without an id
    continues the last call of its choice.
    """

    provider: str = "mistral"
    _indexes: dict[tuple[int, str], int] = attrs.field(factory=dict, init=False)
    _last: dict[int, int] = attrs.field(factory=dict, init=False)

    def feed(self, data: Mapping[str, Any]) -> list[ChatChunk]:
        """The canonical chunks of one decoded chunk (one per choice, then the usage)."""
        chunks = [
            chunk
            for n, choice in enumerate(data.get("choices") or ())
            if (chunk := self._choice_chunk(choice, n)) is not None
        ]
        return with_usage(chunks, data.get("usage"))

    def _choice_chunk(self, choice: Mapping[str, Any], position: int) -> ChatChunk | None:
        index = int(choice.get("index", position))
        delta = choice.get("delta") or {}
        calls = tuple(self._call(index, item) for item in delta.get("tool_calls") or ())
        content = text_of(delta.get("content")) or None
        finish = canonical_finish(choice.get("finish_reason"))
        if finish == "error":
            raise StreamInterrupted(self.provider, "the model failed while generating")
        logprobs = token_logprobs(choice.get("logprobs"))
        if content is None and not calls and finish is None and not logprobs:
            return None
        return ChatChunk(
            content=content,
            tool_calls=calls,
            finish_reason=finish,
            index=index,
            logprobs=logprobs,
        )

    def _call(self, choice: int, item: Mapping[str, Any]) -> ToolCallDelta:
        function = item.get("function") or {}
        call_id = item.get("id")
        if call_id and call_id != "null":
            known = sum(1 for c, _ in self._indexes if c == choice)
            index = self._indexes.setdefault((choice, str(call_id)), known)
            self._last[choice] = index
        else:
            call_id, index = None, max(self._last.get(choice, -1), 0)
        return ToolCallDelta(
            index=index,
            id=call_id,
            name=function.get("name"),
            arguments=arguments_text(function.get("arguments")),
        )


def parse_chunks(chunks: Sequence[Mapping[str, Any]], provider: str = "mistral") -> list[ChatChunk]:
    """A whole decoded stream as canonical chunks (for tests and replay)."""
    reader = ChunkReader(provider)
    return [chunk for data in chunks for chunk in reader.feed(data)]


def parse_embeddings(data: Mapping[str, Any], model: str) -> EmbeddingResult:
    return EmbeddingResult(
        model=str(data.get("model") or model),
        vectors=decode_vectors(data),
        usage=parse_usage(data.get("usage")),
    )


def parse_model_ids(data: Mapping[str, Any]) -> list[str]:
    return [str(item["id"]) for item in data.get("data") or () if "id" in item]


# -- errors --------------------------------------------------------------------------------


@attrs.frozen
class MistralErrorBody:
    """What a Mistral error body says, whichever of its three shapes it came in."""

    message: str
    type: str | None = None
    code: str | None = None
    param: str | None = None


def read_error_body(status: int, body: bytes) -> MistralErrorBody:
    parsed = read_json(body)
    if not isinstance(parsed, dict):
        return MistralErrorBody(f"upstream answered HTTP {status}")
    message = parsed.get("message")
    detail = parsed.get("detail")
    if isinstance(message, dict):
        detail = message.get("detail", detail)
    if isinstance(detail, list) and detail:
        text, param = _validation_detail(detail)
        return MistralErrorBody(text, _opt(parsed.get("type")), _opt(parsed.get("code")), param)
    return MistralErrorBody(
        str(message or detail or f"upstream answered HTTP {status}"),
        _opt(parsed.get("type")),
        _opt(parsed.get("code")),
        _opt(parsed.get("param")),
    )


def _validation_detail(detail: list[Any]) -> tuple[str, str | None]:
    """The first pydantic validation error as a message and the body field it names."""
    first = detail[0] if isinstance(detail[0], dict) else {}
    location = [str(part) for part in first.get("loc") or () if part != "body"]
    param = ".".join(location) or None
    text = str(first.get("msg") or "invalid request")
    return (f"{param}: {text}" if param else text), param


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def map_mistral_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """A Mistral error answer mapped onto the gateway's hierarchy.

    Mistral answers an unknown model with 400 and type `invalid_model`, and a prompt too
    long with a 400 whose message states both token counts.
    """
    error = read_error_body(status, body)
    message = error.message
    if status in (401, 403):
        return AuthenticationFailed(provider, message)
    if status == 404 or error.type == "invalid_model":
        return ModelNotFound(provider, message, model=model)
    context = _CONTEXT.search(message)
    if context:
        requested, limit = (int(group) for group in context.groups())
        return ContextLengthExceeded(
            provider, message, model=model, max_tokens=limit, requested_tokens=requested
        )
    if status == 429:
        return ModelOverloaded(
            provider, message, model=model, retry_after=retry_after_seconds(headers)
        )
    return _by_status(provider, status, error, headers)


def _by_status(
    provider: str, status: int, error: MistralErrorBody, headers: Mapping[str, str]
) -> ProviderError:
    if status == 503:
        return UpstreamUnavailable(
            provider, error.message, retry_after=retry_after_seconds(headers)
        )
    if status == 504:
        return UpstreamTimeout(provider, error.message, timeout_ms=0)
    if status in (400, 422):
        return InvalidUpstreamRequest(provider, error.message, param=error.param)
    return UpstreamHTTPError(
        provider, error.message, status=status, vendor_type=error.type, vendor_code=error.code
    )


def stream_error(provider: str, data: Mapping[str, Any]) -> ProviderError:
    """An error object sent as an event in place of a chunk."""
    message = data.get("message")
    return UpstreamHTTPError(
        provider,
        str(message or "the upstream reported an error mid-stream"),
        status=502,
        vendor_type=_opt(data.get("type")),
        vendor_code=_opt(data.get("code")),
    )


# -- the adapter ---------------------------------------------------------------------------


class MistralProvider(MistralAudio, MistralLive):
    """Chat (whole and streamed, with tools), embeddings and model listing on La Plateforme.

    `endpoint.base_url` is the vendor root (`https://api.mistral.ai`); paths start `/v1`.
    """

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_mistral_error(self.provider_id, status, body, headers, model)

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        """Voxtral's batch models by `POST /v1/audio/transcriptions`; its realtime ones,
        which that endpoint does not serve, through the realtime socket."""
        if is_live_model(request.model):
            return await self.transcribe_file_live(request)
        return await super().transcribe(request)

    @asynccontextmanager
    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        """`transcribe`'s text as it comes; leaving closes the upstream."""
        opened = (
            self.stream_file_live(request)
            if is_live_model(request.model)
            else super().transcribe_stream(request)
        )
        async with opened as events:
            yield events

    async def chat(self, request: ChatRequest) -> ChatResult:
        """One whole answer; cancelling the call closes the upstream request."""
        refuse_top_k(self.provider_id, request.top_k)
        payload = chat_payload(request, stream=False)
        data = await self.post_json("/v1/chat/completions", payload, model=request.model)
        return parse_chat(data, self.provider_id)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[Batched[ChatChunk]]:
        """The answer's chunks, a network read's at a time (`streams.batched`); leaving
        the context closes the response."""
        refuse_top_k(self.provider_id, request.top_k)
        payload = chat_payload(request, stream=True)
        async with (
            self.open_stream("/v1/chat/completions", payload, model=request.model) as resp,
            aclosing(self.chunk_batches(resp, _CompletionEvents(self))) as chunks,
        ):
            yield Batched(chunks, lambda: resp.complete)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        data = await self.post_json(
            "/v1/embeddings", embedding_payload(request), model=request.model
        )
        return parse_embeddings(data, request.model)

    async def ocr(self, request: OcrRequest) -> OcrResult:
        data = await self.post_json("/v1/ocr", ocr_payload(request), model=request.model)
        return parse_ocr(data, request, total_pages=None)

    async def list_models(self) -> list[str]:
        return parse_model_ids(await self.get_json("/v1/models"))


class _CompletionEvents:
    """Mistral's stream events as canonical chunks (`HttpProvider.chunk_batches`) until
    `[DONE]`, the rest read to the end unread; an error event is raised, and a stream
    ending without a finish reason was cut."""

    def __init__(self, provider: HttpProvider) -> None:
        self._provider = provider
        self._reader = ChunkReader(provider.provider_id)
        self._done = self._finished = False

    def read(self, event: SSEEvent) -> list[ChatChunk]:
        self._done = self._done or event.data == "[DONE]"
        data = None if self._done else self._provider.event_json(event)
        if not isinstance(data, dict):
            return []
        if data.get("object") == "error":
            raise stream_error(self._provider.provider_id, data)
        chunks = self._reader.feed(data)
        self._finished = self._finished or any(c.finish_reason is not None for c in chunks)
        return chunks

    def end(self) -> list[ChatChunk]:
        if not self._finished:
            raise StreamInterrupted(
                self._provider.provider_id, "the upstream stream ended before finishing"
            )
        return []
