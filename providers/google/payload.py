"""Gemini request bodies (generateContent, embeddings), built from canonical requests (pure)."""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from providers import content_parts
from providers.chat_support import GEMINI_TIERS, THINKING_BUDGETS
from providers.types import (
    JSON,
    ChatRequest,
    EmbeddingRequest,
)

API_VERSION = "/v1beta"


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

MAX_EMBED_REQUESTS = 100
"""`batchEmbedContents` takes at most this many requests a call."""


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
    payload.update(_request_options(request))
    return payload


def _request_options(request: ChatRequest) -> JSON:
    """The request-level fields: `serviceTier`, `store` (Gemini's request logging) and
    `labels` (OpenAI's `metadata`)."""
    out: JSON = {}
    tier = GEMINI_TIERS.get(request.service_tier or "auto")
    if tier is not None:
        out["serviceTier"] = tier
    if request.store is not None:
        out["store"] = request.store
    if request.metadata:
        out["labels"] = dict(request.metadata)
    return out


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
    """Chat-completions content (a string or a list of typed parts) as Gemini parts:
    documents and audio travel inline (`inlineData`), as Gemini reads them."""
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
        elif item.get("type") == "file":
            doc = content_parts.document(item)
            parts.append({"inlineData": {"mimeType": doc.media_type, "data": doc.data}})
        elif item.get("type") == "input_audio":
            mime, data = content_parts.audio(item)
            parts.append({"inlineData": {"mimeType": mime, "data": data}})
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
    """Sampling and output settings: penalties, seed, `n` (`candidateCount`) and the
    log-probabilities exist in Gemini's config too; `reasoning_effort` is its thinking."""
    config: JSON = {}
    logprobs = request.logprobs is True
    pairs = (
        ("temperature", request.temperature),
        ("topP", request.top_p),
        ("topK", request.top_k),
        ("maxOutputTokens", request.max_tokens),
        ("presencePenalty", request.presence_penalty),
        ("frequencyPenalty", request.frequency_penalty),
        ("seed", request.seed),
        ("candidateCount", request.n),
        ("responseLogprobs", True if logprobs else None),
        ("logprobs", request.top_logprobs if logprobs and request.top_logprobs else None),
    )
    config.update({key: value for key, value in pairs if value is not None})
    if request.stop:
        config["stopSequences"] = (
            [request.stop] if isinstance(request.stop, str) else list(request.stop)
        )
    config.update(_response_format(request.response_format))
    thinking = thinking_config(request.reasoning_effort, request.thinking_style)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    return config


def thinking_config(effort: str | None, style: str | None) -> JSON | None:
    """`reasoning_effort` as Gemini's `thinkingConfig`: a token budget for Gemini 2.5
    (`none` is 0, thinking off), a thinking level for Gemini 3 and later (the default
    for a model the catalog does not describe)."""
    if effort is None:
        return None
    if style == "budget":
        return {"thinkingBudget": 0 if effort == "none" else THINKING_BUDGETS[effort]}
    return {"thinkingLevel": effort.upper()}


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
