"""The cache key of a chat request: what makes two requests "the same question".

Pure and I/O-free. The key is the SHA-256 of a canonical JSON document built from the
request as the upstream will see it, so two requests share a key exactly when they would
put the same question to the same model of the same provider for the same workspace.

What is normalised (spellings that cannot change the answer):

- JSON key order and whitespace (the document is dumped with sorted keys, compact).
- Sampling defaults made explicit: `temperature` and `top_p` absent mean 1.0, the two
  penalties absent mean 0.0; numbers compare as floats (`1` equals `1.0`).
- `stop`: a string, a one-item list and a list with repeats or in another order are the
  same set of stop sequences; an empty list is no stop at all.
- `tools`: an empty list is no tools; `null` members of a tool or its `function` are
  dropped (a schema's own `null`s, e.g. a `default`, are kept: they mean something).
- `tool_choice`: without tools it cannot matter and is dropped; with tools, absent means
  `auto`.
- `response_format`: absent equals `{"type": "text"}`.
- Messages: `null` members are dropped (`"name": null` is no name; an assistant turn with
  tool calls and `"content": null` equals one without `content`), and a content array made
  of one single text part equals that text as a plain string.

What is deliberately *not* normalised: the text itself. Whitespace, case and Unicode form
are kept byte for byte, since a trailing space or newline changes the tokens the model
reads and so may change its answer; an exact-match cache must never hand one question
the answer to another. The order of messages, of content parts and of tools is kept too.

- `n` absent is 1; `logprobs` absent is false, and `top_logprobs` counts only with it;
  `parallel_tool_calls` absent is true and counts only with tools; an empty `logit_bias`
  is none; `modalities` absent is `["text"]`.

Which parameters belong in the key is `providers.chat_params.PARAMETERS`' decision (a
test walks OpenAI's parameter list against this module). Left out because they never
reach the model's answer: `user`, `safety_identifier`, `metadata`, `store`,
`service_tier`, the prompt-cache hints, `prediction` (it only speeds generation up),
`stream`, `stream_options`, the `service` extension (tags, fallbacks, retry), routing
headers and the client's model alias (the *resolved* provider and upstream model are in
the key, so `auto` and an explicit model share entries when they resolve alike). `seed`,
`max_tokens` (either spelling) and `reasoning_effort` are kept as given (absent means the
model's own default, which is no particular value).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from providers.types import ChatRequest

KEY_VERSION = 3
"""Bumped whenever the normalisation or its serialisation changes (3: orjson, whose
exponents are written `1e-7` where the stdlib wrote `1e-07`), so that old and new keys
never collide."""

_DEFAULT_TEMPERATURE = 1.0
_DEFAULT_TOP_P = 1.0
_DEFAULT_PENALTY = 0.0

_stdlib_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def _canonical_bytes(document: dict[str, Any]) -> bytes:
    """Sorted keys, compact, UTF-8. orjson (every request computes the key: the usage
    record keeps it even with the cache off; the stdlib took ~70 us of it); the stdlib for
    what orjson refuses: lone surrogates (`"\\ud800"`, which still hash, distinctly) and
    integers beyond 64 bits."""
    try:
        return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return _stdlib_dumps(document).encode("utf-8", "surrogatepass")


def cache_key(
    *, workspace_id: str, provider_id: str, upstream_model: str, request: ChatRequest
) -> str:
    """The hex SHA-256 key of `request` sent to `provider_id`/`upstream_model` for a workspace."""
    document = canonical_request(
        workspace_id=workspace_id,
        provider_id=provider_id,
        upstream_model=upstream_model,
        request=request,
    )
    return hashlib.sha256(_canonical_bytes(document)).hexdigest()


def canonical_request(
    *, workspace_id: str, provider_id: str, upstream_model: str, request: ChatRequest
) -> dict[str, Any]:
    """The normalised document the key hashes (exposed so tests and logs can show it).
    Built as one dict (every request computes it: the usage record keeps the key with
    the cache off too)."""
    tools = _tools(request.tools)
    has_tools = tools is not None
    logprobs = bool(request.logprobs)
    temperature, top_p = request.temperature, request.top_p
    presence, frequency = request.presence_penalty, request.frequency_penalty
    return {
        "v": KEY_VERSION,
        "workspace": workspace_id,
        "provider": provider_id,
        "model": upstream_model,
        "messages": [_message(m) for m in request.messages],
        "temperature": _DEFAULT_TEMPERATURE if temperature is None else float(temperature),
        "top_p": _DEFAULT_TOP_P if top_p is None else float(top_p),
        "presence_penalty": _DEFAULT_PENALTY if presence is None else float(presence),
        "frequency_penalty": _DEFAULT_PENALTY if frequency is None else float(frequency),
        "max_tokens": request.max_tokens,
        "stop": sorted(set(request.stop)) if request.stop else None,
        "tools": tools,
        "tool_choice": _tool_choice(request.tool_choice, has_tools=has_tools),
        "response_format": _response_format(request.response_format),
        "seed": request.seed,
        "top_k": request.top_k,
        # The parameters beyond sampling that change what the model writes, with their
        # defaults made explicit.
        "n": request.n or 1,
        "logit_bias": dict(request.logit_bias) if request.logit_bias else None,
        "logprobs": logprobs,
        "top_logprobs": (request.top_logprobs or 0) if logprobs else None,
        "parallel_tool_calls": (request.parallel_tool_calls is not False if has_tools else None),
        "reasoning_effort": request.reasoning_effort,
        "verbosity": request.verbosity,
        "modalities": list(request.modalities or ("text",)),
        "audio": request.audio,
        "web_search_options": request.web_search_options,
        "moderation": request.moderation,
    }


def _message(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """The message without its `null` members, a lone text part as its text; the
    client's own mapping when there is nothing to change (it is only read)."""
    content = message.get("content")
    part = content[0] if isinstance(content, list) and len(content) == 1 else None
    single_text = isinstance(part, Mapping) and part.get("type") == "text" and len(part) == 2
    if not single_text and None not in message.values():
        return message
    normalised = {k: v for k, v in message.items() if v is not None}
    if single_text:
        assert part is not None
        normalised["content"] = part.get("text")
    return normalised


def _tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    return [_tool(tool) for tool in tools]


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    normalised = {k: v for k, v in tool.items() if v is not None}
    function = normalised.get("function")
    if isinstance(function, Mapping):
        normalised["function"] = {k: v for k, v in function.items() if v is not None}
    return normalised


def _tool_choice(choice: str | Mapping[str, Any] | None, *, has_tools: bool) -> Any:
    if not has_tools:
        return None
    return "auto" if choice is None else choice


def _response_format(value: Mapping[str, Any] | None) -> Any:
    if value is None or dict(value) == {"type": "text"}:
        return None
    return value
