"""Reading the chat parameters beyond sampling, tools and messages (pure): `n`, log
probabilities, reasoning, output controls, the vendor's own products (store, metadata,
service tier, prompt cache, moderation) and end-user ids.

Each is checked as OpenAI checks it (type, range, the enumerations of its API
reference) and named with its value in the 400. Whether the chosen model can honour a
valid value is decided later, per candidate (`providers.chat_support`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gateway.platform.errors import invalid_request
from gateway.platform.params import optional_string, whole_number
from gateway.upstream.options import (
    CACHE_RETENTIONS,
    MAX_SAFETY_IDENTIFIER,
    METADATA_KEY,
    METADATA_PAIRS,
    METADATA_VALUE,
    SERVICE_TIERS,
    VERBOSITIES,
)
from providers.catalog import REASONING_EFFORTS
from providers.chat_params import PARAMETERS

MAX_CHOICES = 128  # `n`, as OpenAI bounds it
MAX_TOP_LOGPROBS = 20
LOGIT_BIAS = (-100, 100)
MODALITIES = ("text", "audio")
AUDIO_FORMATS = ("wav", "aac", "mp3", "flac", "opus", "pcm16")
"""The formats an audio model speaks in (OpenAI's `ChatCompletionAudioParam.format`)."""
INPUT_AUDIO_FORMATS = ("wav", "mp3")
"""The formats of an `input_audio` part (OpenAI's `InputAudio.format`)."""
SEARCH_CONTEXT_SIZES = ("low", "medium", "high")
CACHE_MODES = ("implicit", "explicit")
EXTENSIONS = frozenset({"provider", "routing_mode", "service", "top_k"})
"""The gateway's own body fields beside OpenAI's (`top_k`: the Messages API's sampling
setting, which the chat body of `/v1/messages` carries; Anthropic, Gemini and Cohere take
it, OpenAI and Mistral refuse it)."""
_TOKEN_ID = re.compile(r"^\d+$")


def check_known_fields(body: Mapping[str, Any]) -> None:
    """Refuse a field that is neither an OpenAI chat parameter nor a gateway extension,
    as OpenAI does: a misspelt or unsupported parameter must not be ignored in silence."""
    for name in body:
        if name not in PARAMETERS and name not in EXTENSIONS:
            raise invalid_request(
                f"Unrecognized request argument supplied: '{name}'.", param=name, value=None
            )


def parse_options(body: Mapping[str, Any]) -> dict[str, Any]:
    """The `ChatRequest` fields of these parameters, validated (absent ones omitted)."""
    if body.keys().isdisjoint(OPTION_NAMES):  # most requests: none of them, nothing to read
        return {}
    options = _options(body)
    _check_audio(options)
    return {name: value for name, value in options.items() if value is not None}


def _options(body: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter of this module, validated, None where absent; each is read from
    the body field of its own name (`OPTION_NAMES`)."""
    return {
        "n": _bounded_int(body, "n", 1, MAX_CHOICES),
        "logit_bias": _logit_bias(body.get("logit_bias")),
        "logprobs": _bool(body, "logprobs"),
        "top_logprobs": _top_logprobs(body),
        "parallel_tool_calls": _bool(body, "parallel_tool_calls"),
        "reasoning_effort": _one_of(body, "reasoning_effort", REASONING_EFFORTS),
        "verbosity": _one_of(body, "verbosity", VERBOSITIES),
        "service_tier": _one_of(body, "service_tier", SERVICE_TIERS),
        "store": _bool(body, "store"),
        "metadata": _metadata(body.get("metadata")),
        "prediction": _prediction(body.get("prediction")),
        "modalities": _modalities(body.get("modalities")),
        "audio": _audio(body.get("audio")),
        "web_search_options": _web_search(body.get("web_search_options")),
        "moderation": _moderation(body.get("moderation")),
        "safety_identifier": _short_string(body, "safety_identifier", MAX_SAFETY_IDENTIFIER),
        "prompt_cache_key": optional_string(body, "prompt_cache_key"),
        "prompt_cache_options": _cache_options(body.get("prompt_cache_options")),
        "prompt_cache_retention": _one_of(body, "prompt_cache_retention", CACHE_RETENTIONS),
    }


def stream_flags(value: Any) -> tuple[bool, bool]:
    """`stream_options` as (include_usage, include_obfuscation)."""
    if value is None:
        return False, False
    if not isinstance(value, dict) or set(value) - {"include_usage", "include_obfuscation"}:
        raise invalid_request(
            "'stream_options' must be an object with booleans 'include_usage' and "
            "'include_obfuscation'.",
            param="stream_options",
            value=value,
        )
    usage, obfuscation = value.get("include_usage", False), value.get("include_obfuscation", False)
    for name, flag in (("include_usage", usage), ("include_obfuscation", obfuscation)):
        if not isinstance(flag, bool):
            raise invalid_request(
                f"'stream_options.{name}' must be a boolean.",
                param=f"stream_options.{name}",
                value=flag,
            )
    return usage, obfuscation


# -- scalars -------------------------------------------------------------------------------


def _bool(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise invalid_request(f"'{name}' must be a boolean.", param=name, value=value)
    return value


def _bounded_int(body: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    whole = whole_number(value)  # 2.0: an integer, as JSON Schema says
    if whole is None or not low <= whole <= high:
        raise invalid_request(
            f"'{name}' must be an integer from {low} to {high}.", param=name, value=value
        )
    return whole


def _one_of(body: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> str | None:
    value = body.get(name)
    if value is not None and value not in allowed:
        raise invalid_request(
            f"'{name}' must be one of {', '.join(allowed)}.", param=name, value=value
        )
    return value


def _short_string(body: Mapping[str, Any], name: str, longest: int) -> str | None:
    value = optional_string(body, name)
    if value is not None and len(value) > longest:
        raise invalid_request(
            f"'{name}' must be at most {longest} characters.", param=name, value=value
        )
    return value


def _top_logprobs(body: Mapping[str, Any]) -> int | None:
    value = _bounded_int(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if value and body.get("logprobs") is not True:
        raise invalid_request(
            "'top_logprobs' needs 'logprobs': true.", param="top_logprobs", value=value
        )
    return value


# -- objects -------------------------------------------------------------------------------


def _logit_bias(value: Any) -> dict[str, int] | None:
    """Token ids (as strings, OpenAI's tokenizer's) to biases from -100 to 100."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid_request("'logit_bias' must be an object.", param="logit_bias", value=value)
    low, high = LOGIT_BIAS
    for token, bias in value.items():
        number = isinstance(bias, int | float) and not isinstance(bias, bool)
        if not _TOKEN_ID.match(token) or not number or not low <= bias <= high:
            raise invalid_request(
                f"'logit_bias' maps token ids to numbers from {low} to {high}.",
                param=f"logit_bias.{token}",
                value=bias,
            )
    return {token: int(bias) for token, bias in value.items()}


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    pairs = value.items() if isinstance(value, dict) else ()
    if (
        not isinstance(value, dict)
        or len(value) > METADATA_PAIRS
        or any(
            not isinstance(v, str) or len(k) > METADATA_KEY or len(v) > METADATA_VALUE
            for k, v in pairs
        )
    ):
        raise invalid_request(
            f"'metadata' must be an object of at most {METADATA_PAIRS} string pairs (keys up "
            f"to {METADATA_KEY} characters, values up to {METADATA_VALUE}).",
            param="metadata",
            value=value,
        )
    return value


def _prediction(value: Any) -> dict[str, Any] | None:
    """`{type: "content", content: text or text parts}`."""
    if value is None:
        return None
    content = value.get("content") if isinstance(value, dict) else None
    parts_ok = isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in content
    )
    if (
        not isinstance(value, dict)
        or value.get("type") != "content"
        or not (isinstance(content, str) or parts_ok)
    ):
        raise invalid_request(
            "'prediction' must be {type: 'content', content: a string or text parts}.",
            param="prediction",
            value=value,
        )
    return value


def _modalities(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or any(m not in MODALITIES for m in value):
        raise invalid_request(
            "'modalities' must be a non-empty array of 'text' and 'audio'.",
            param="modalities",
            value=value,
        )
    return tuple(value)


def _audio(value: Any) -> dict[str, Any] | None:
    """`audio`: a `voice` (a name, or `{id}` for a custom voice) and a `format`."""
    if value is None:
        return None
    if isinstance(value, dict) and value.get("format") in AUDIO_FORMATS:
        voice = value.get("voice")
        if (isinstance(voice, str) and voice) or (
            isinstance(voice, dict) and isinstance(voice.get("id"), str)
        ):
            return value
    raise invalid_request(
        "'audio' must be {voice: a voice name or {id}, format: one of "
        f"{', '.join(AUDIO_FORMATS)}}}.",
        param="audio",
        value=value,
    )


def _check_audio(options: Mapping[str, Any]) -> None:
    spoken = "audio" in (options.get("modalities") or ())
    if spoken and options.get("audio") is None:
        raise invalid_request(
            "'audio' is required when 'modalities' asks for audio.", param="audio", value=None
        )


def _web_search(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("search_context_size", "medium") not in (
        SEARCH_CONTEXT_SIZES
    ):
        raise invalid_request(
            "'web_search_options' must be an object; its 'search_context_size' one of "
            f"{', '.join(SEARCH_CONTEXT_SIZES)}.",
            param="web_search_options",
            value=value,
        )
    return value


def _moderation(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("model"), str):
        raise invalid_request(
            "'moderation' must be an object with a 'model'.", param="moderation", value=value
        )
    return value


def _cache_options(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or value.get("mode", "implicit") not in CACHE_MODES
        or value.get("ttl", "30m") != "30m"
    ):
        raise invalid_request(
            "'prompt_cache_options' must be {mode: implicit or explicit, ttl: '30m'}.",
            param="prompt_cache_options",
            value=value,
        )
    return value


OPTION_NAMES = frozenset(_options({}))
"""The body fields `parse_options` reads: a body with none of them has no options."""
