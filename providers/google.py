"""Adapter for the Google Gemini API (Generative Language API, v1beta).

Gemini's wire format differs from chat-completions in ways the translation must respect:
system messages travel apart (`systemInstruction`), the assistant is role `model`, turns
of one role must not repeat (consecutive ones are merged), tool results are
`functionResponse` parts of a *user* turn named by function rather than by call id, and
function calls arrive whole (never as argument fragments), without ids of their own on
most models. The pure functions below do that translation both ways; `GoogleProvider`
only moves bytes. `endpoint.base_url` is the vendor root (the official
`https://generativelanguage.googleapis.com`, or the simulator's `/google` prefix): every
path starts with `/v1beta`.
"""

from __future__ import annotations

import json
import math
import mimetypes
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any
from urllib.parse import quote

import attrs

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
)
from providers.google_audio import GoogleAudio
from providers.http import (
    batches,
    merge_embeddings,
    read_json,
    retry_after_seconds,
)
from providers.types import (
    JSON,
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from providers.upstream import UpstreamStream

API_VERSION = "/v1beta"

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

_TOOL_CHOICE_MODES: Mapping[str, str] = {"none": "NONE", "auto": "AUTO", "required": "ANY"}

# Gemini's `parameters` take an OpenAPI 3.0 subset and refuse unknown keys (a strict-mode
# `additionalProperties: false` or a `$schema` would fail the whole request), so a JSON
# schema is narrowed to the keys Gemini documents.
_SCHEMA_KEYS = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "default", "example",
        "items", "minItems", "maxItems", "properties", "required", "minProperties",
        "maxProperties", "propertyOrdering", "anyOf", "minimum", "maximum", "minLength",
        "maxLength", "pattern",
    }
)  # fmt: skip

_MAX_MODEL_PAGES = 20
MAX_EMBED_REQUESTS = 100
"""`batchEmbedContents` takes at most this many requests a call."""

_CONTEXT_LENGTH = re.compile(r"input token count.*exceeds the maximum", re.IGNORECASE)
_NUMBERS = re.compile(r"\d+")


# -- request out ---------------------------------------------------------------------------


def model_path(model: str, method: str) -> str:
    """The REST path of `method` on `model`; accepts ids with or without `models/`."""
    name = model.removeprefix("models/")
    return f"{API_VERSION}/models/{name}:{method}"


def generate_payload(request: ChatRequest) -> JSON:
    """The JSON body of a `generateContent` (or `streamGenerateContent`) call."""
    system, contents = messages_to_contents(request.messages)
    payload: JSON = {"contents": contents}
    if system:
        payload["systemInstruction"] = {"parts": system}
    config = generation_config(request)
    if config:
        payload["generationConfig"] = config
    if request.tools:
        payload["tools"] = [{"functionDeclarations": [_declaration(t) for t in request.tools]}]
    if request.tool_choice is not None:
        payload["toolConfig"] = {"functionCallingConfig": tool_choice_config(request.tool_choice)}
    return payload


def messages_to_contents(messages: Iterable[Mapping[str, Any]]) -> tuple[list[JSON], list[JSON]]:
    """Split chat messages into (system parts, Gemini turns).

    Tool results name their function through the earlier assistant call with the same
    `tool_call_id`, since Gemini matches results to calls by function name.
    """
    system: list[JSON] = []
    turns: list[JSON] = []
    call_names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend(_content_parts(message.get("content")))
            continue
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                call_names[str(call.get("id"))] = call["function"]["name"]
            _append_turn(turns, "model", _assistant_parts(message))
        elif role == "tool":
            _append_turn(turns, "user", [_function_response(message, call_names)])
        else:
            _append_turn(turns, "user", _content_parts(message.get("content")))
    return system, turns


def _append_turn(turns: list[JSON], role: str, parts: list[JSON]) -> None:
    """Add parts as a turn of `role`, merged into the previous turn when it has that role
    (Gemini wants user and model turns to alternate)."""
    if not parts:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["parts"].extend(parts)
    else:
        turns.append({"role": role, "parts": list(parts)})


def _content_parts(content: Any) -> list[JSON]:
    """Chat-completions content (a string or a list of typed parts) as Gemini parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[JSON] = []
    for item in content:
        if item.get("type") == "text" and item.get("text"):
            parts.append({"text": item["text"]})
        elif item.get("type") == "image_url":
            url = item.get("image_url") or {}
            parts.append(image_part(url.get("url", "") if isinstance(url, Mapping) else url))
    return parts


def image_part(url: str) -> JSON:
    """A `data:` URL becomes inline bytes; any other URL is passed as a file reference."""
    if url.startswith("data:") and "," in url:
        header, data = url[5:].split(",", 1)
        mime = header.split(";")[0] or "application/octet-stream"
        return {"inlineData": {"mimeType": mime, "data": data}}
    mime = mimetypes.guess_type(url)[0] or "image/jpeg"
    return {"fileData": {"mimeType": mime, "fileUri": url}}


def _assistant_parts(message: Mapping[str, Any]) -> list[JSON]:
    parts = _content_parts(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        args = _json_or(function.get("arguments") or "{}", {})
        parts.append(
            {
                "functionCall": {
                    "name": function.get("name", ""),
                    "args": args if isinstance(args, dict) else {"value": args},
                }
            }
        )
    return parts


def _function_response(message: Mapping[str, Any], call_names: Mapping[str, str]) -> JSON:
    name = call_names.get(str(message.get("tool_call_id")), message.get("name") or "")
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
    result = _json_or(content, content) if isinstance(content, str) else content
    return {"functionResponse": {"name": name, "response": {"result": result}}}


def _json_or(text: str, fallback: Any) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return fallback


def generation_config(request: ChatRequest) -> JSON:
    """Sampling and output settings; penalties and seed exist in Gemini's config too."""
    config: JSON = {}
    pairs = (
        ("temperature", request.temperature),
        ("topP", request.top_p),
        ("maxOutputTokens", request.max_tokens),
        ("presencePenalty", request.presence_penalty),
        ("frequencyPenalty", request.frequency_penalty),
        ("seed", request.seed),
    )
    config.update({key: value for key, value in pairs if value is not None})
    if request.stop:
        config["stopSequences"] = (
            [request.stop] if isinstance(request.stop, str) else list(request.stop)
        )
    config.update(_response_format(request.response_format))
    return config


def _response_format(response_format: Mapping[str, Any] | None) -> JSON:
    kind = (response_format or {}).get("type")
    if kind == "json_object":
        return {"responseMimeType": "application/json"}
    if kind == "json_schema":
        schema = (response_format or {}).get("json_schema", {}).get("schema")
        config: JSON = {"responseMimeType": "application/json"}
        if schema:
            config["responseSchema"] = openapi_schema(schema)
        return config
    return {}


def _declaration(tool: Mapping[str, Any]) -> JSON:
    function = tool.get("function") or {}
    declaration: JSON = {"name": function.get("name", "")}
    if function.get("description"):
        declaration["description"] = function["description"]
    parameters = function.get("parameters")
    if parameters and parameters.get("properties"):
        declaration["parameters"] = openapi_schema(parameters)
    return declaration


def openapi_schema(schema: Mapping[str, Any]) -> JSON:
    """A JSON schema narrowed to the OpenAPI subset Gemini accepts.

    A `type` list such as `["string", "null"]` becomes one type plus `nullable`.
    """
    out: JSON = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties":
            out[key] = {name: openapi_schema(sub) for name, sub in value.items()}
        elif key == "items" and isinstance(value, Mapping):
            out[key] = openapi_schema(value)
        elif key == "anyOf":
            out[key] = [openapi_schema(sub) for sub in value]
        elif key == "type" and isinstance(value, list):
            kinds = [kind for kind in value if kind != "null"]
            out[key] = kinds[0] if kinds else "null"
            if len(kinds) < len(value):
                out["nullable"] = True
        else:
            out[key] = value
    return out


def tool_choice_config(choice: str | Mapping[str, Any]) -> JSON:
    """A chat-completions `tool_choice` as Gemini's `functionCallingConfig`."""
    if isinstance(choice, str):
        return {"mode": _TOOL_CHOICE_MODES.get(choice, "AUTO")}
    name = (choice.get("function") or {}).get("name")
    return {"mode": "ANY", "allowedFunctionNames": [name]} if name else {"mode": "AUTO"}


def embedding_payload(request: EmbeddingRequest, texts: Sequence[str] | None = None) -> JSON:
    """A `batchEmbedContents` body: one request per input (of `texts`, one batch of
    `request.inputs`, when given), in input order."""
    name = "models/" + request.model.removeprefix("models/")
    requests: list[JSON] = []
    for text in request.inputs if texts is None else texts:
        item: JSON = {"model": name, "content": {"parts": [{"text": text}]}}
        if request.dimensions is not None:
            item["outputDimensionality"] = request.dimensions
        requests.append(item)
    return {"requests": requests}


# -- answers in ----------------------------------------------------------------------------


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


# -- errors --------------------------------------------------------------------------------


def _error_object(body: bytes) -> JSON:
    parsed = read_json(body)
    if isinstance(parsed, list) and parsed:  # the JSON-array stream form wraps errors too
        parsed = parsed[0]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


def _detail_reasons(error: Mapping[str, Any]) -> set[str]:
    return {str(d.get("reason")) for d in error.get("details") or () if isinstance(d, dict)}


def _retry_delay(error: Mapping[str, Any], headers: Mapping[str, str]) -> int | None:
    """Seconds to wait, from the `google.rpc.RetryInfo` detail or a Retry-After header."""
    for detail in error.get("details") or ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0, math.ceil(float(delay[:-1])))
            except ValueError:
                break
    return retry_after_seconds(headers)


def map_google_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """A Google error answer (`{"error": {code, message, status, details}}`) mapped.

    Google answers an invalid API key with 400 (reason API_KEY_INVALID), not 401.
    """
    error = _error_object(body)
    message = str(error.get("message") or f"upstream answered HTTP {status}")
    kind = error.get("status")
    if status in (401, 403) or "API_KEY_INVALID" in _detail_reasons(error):
        return AuthenticationFailed(provider, message)
    if status == 404:
        return ModelNotFound(provider, message, model=model)
    if status == 400 and _CONTEXT_LENGTH.search(message):
        # "The input token count (N) exceeds the maximum number of tokens allowed (M)."
        numbers = [int(n) for n in _NUMBERS.findall(message)]
        requested, limit = numbers[:2] if len(numbers) >= 2 else (None, None)
        return ContextLengthExceeded(
            provider, message, model=model, max_tokens=limit, requested_tokens=requested
        )
    if status == 429:
        return ModelOverloaded(
            provider, message, model=model, retry_after=_retry_delay(error, headers)
        )
    if status == 503:
        return UpstreamUnavailable(provider, message, retry_after=_retry_delay(error, headers))
    if status == 504:
        return UpstreamTimeout(provider, message, timeout_ms=0)
    if status in (400, 422):
        return InvalidUpstreamRequest(provider, message)
    return UpstreamHTTPError(
        provider, message, status=status, vendor_type=str(kind) if kind else None
    )


def stream_error(provider: str, data: Mapping[str, Any]) -> ProviderError:
    """An error object sent in place of a stream event, mapped by its own code."""
    error = data.get("error") or {}
    status = int(error.get("code") or 500)
    return map_google_error(provider, status, json.dumps(data).encode(), {}, "")


# -- the adapter ---------------------------------------------------------------------------


class GoogleProvider(GoogleAudio):
    """Chat, streamed chat, embeddings and model listing over the Gemini API."""

    def auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.endpoint.api_key}

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_google_error(self.provider_id, status, body, headers, model)

    async def chat(self, request: ChatRequest) -> ChatResult:
        path = model_path(request.model, "generateContent")
        data = await self.post_json(path, generate_payload(request), model=request.model)
        return parse_generate(data, request.model, provider=self.provider_id)

    @asynccontextmanager
    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[ChatChunk]]:
        path = model_path(request.model, "streamGenerateContent") + "?alt=sse"
        payload = generate_payload(request)
        async with (
            self.open_stream(path, payload, model=request.model) as response,
            aclosing(self._chunks(response)) as chunks,
        ):
            yield chunks

    async def _chunks(self, response: UpstreamStream) -> AsyncGenerator[ChatChunk]:
        """Canonical chunks of a streamed answer.

        An error event or a blocked prompt is raised only once the upstream has ended its
        stream (which it does right after either): leaving httpx's byte iterators part-way
        would abandon them to the garbage collector. Cancellation ends the read at once.
        """
        translator = StreamTranslator(self.provider_id)
        failure: ProviderError | None = None
        async with aclosing(self.sse_events(response)) as events:
            async for event in events:
                data = read_json(event.data)
                if failure is not None or not isinstance(data, dict):
                    continue
                try:
                    chunks = translator.feed(data)
                except ProviderError as exc:
                    failure = exc
                    continue
                for chunk in chunks:
                    yield chunk
        if failure is not None:
            raise failure
        for chunk in translator.close():
            yield chunk

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embeddings through `batchEmbedContents`, in calls of at most 100 inputs made one
        after the other (a failed call fails the whole); usage is estimated (see
        `estimate_tokens`) because the API does not report it. Cancelling it closes the
        call in flight."""
        path = model_path(request.model, "batchEmbedContents")
        parts = []
        for texts in batches(request.inputs, MAX_EMBED_REQUESTS):
            payload = embedding_payload(request, texts)
            data = await self.post_json(path, payload, model=request.model)
            parts.append((parse_vectors(data), estimate_tokens(texts)))
        return merge_embeddings(request.model, parts)

    async def list_models(self) -> list[str]:
        """Every page of `GET /v1beta/models`, up to a bound against a looping token."""
        ids: list[str] = []
        token = ""
        for _ in range(_MAX_MODEL_PAGES):
            query = "?pageSize=1000" + (f"&pageToken={quote(token)}" if token else "")
            data = await self.get_json(f"{API_VERSION}/models{query}")
            ids.extend(parse_model_ids(data))
            token = str(data.get("nextPageToken") or "")
            if not token:
                break
        return ids
