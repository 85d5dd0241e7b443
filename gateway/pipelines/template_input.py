"""Validation of a custom pipeline template's fields (pure: catalog and voices handed in).

The spec's creation fields: `name`, `stt` (`model`, `language`), `llm` (`model`,
`system_prompt`, `max_tokens`, `temperature`), `tts` (`model`, `voice`); we also take
`description`, `tts.speed` and `tts.format`. Shapes and ranges are a 400
`invalid_request`; a model the catalog does not know, or one without the stage's
capability, is a 422 `invalid_model`; a voice no catalog, standard voice or mapping of the
workspace knows is a 422 `invalid_voice` (the caller checks mappings: they live in the
store).
"""

from __future__ import annotations

import re
from typing import Any

from gateway.pipelines.templates import (
    AUDIO_FORMATS,
    LlmSettings,
    SttSettings,
    TtsSettings,
    builtin_templates,
)
from gateway.platform.errors import ApiError, invalid_request
from providers.catalog import Catalog
from providers.voices import VoiceCatalog

MAX_NAME = 64
MAX_PROMPT = 8000
MAX_DESCRIPTION = 500
MAX_TOKENS = 4096
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")


def parse_template_fields(body: Any, catalog: Catalog, *, partial: bool = False) -> dict[str, Any]:
    """The fields of a create (all required ones) or an update (`partial`: those present),
    as template parts: `name`, `description`, `stt`, `llm`, `tts`."""
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.")
    unknown = sorted(set(body) - {"name", "description", "stt", "llm", "tts"})
    if unknown:
        raise invalid_request(f"Unknown field '{unknown[0]}'.", param=unknown[0])
    found: dict[str, Any] = {}
    if not partial or "name" in body:
        found["name"] = _name(body.get("name"))
    if "description" in body or not partial:
        found["description"] = _text(body.get("description"), "description", MAX_DESCRIPTION)
    if not partial or "stt" in body:
        found["stt"] = _stt(_object(body.get("stt"), "stt"), catalog)
    if not partial or "llm" in body:
        found["llm"] = _llm(_object(body.get("llm"), "llm"), catalog)
    if not partial or "tts" in body:
        tts = body.get("tts")
        # An explicit null: a template whose answer is text only.
        found["tts"] = None if tts is None and "tts" in body else _tts(_object(tts, "tts"), catalog)
    return found


def voice_known(voices: VoiceCatalog, voice: str) -> bool:
    """A catalog voice id or a standard voice id (a workspace mapping is checked apart)."""
    return voices.voice(voice) is not None or voices.standard_voice(voice) is not None


def unknown_voice(voice: str, param: str = "tts.voice") -> ApiError:
    return ApiError(
        422,
        "invalid_voice",
        f"Unknown voice '{voice}': use a standard voice, a voice id from GET /v1/audio/voices, "
        "or a voice mapping of this workspace.",
        param=param,
        value=voice,
    )


def checked_model(catalog: Catalog, model: Any, capability: str, param: str) -> str:
    """`model` when the catalog knows it and it has `capability`; 422 otherwise."""
    if not isinstance(model, str) or not model:
        raise invalid_request(f"'{param}' must be a model id.", param=param, value=model)
    info = catalog.model(model)
    if info is None:
        raise ApiError(422, "invalid_model", f"Unknown model '{model}'.", param=param, model=model)
    if capability not in info.capabilities:
        raise ApiError(
            422,
            "invalid_model",
            f"The model '{model}' does not support {capability}.",
            param=param,
            model=model,
        )
    return info.id


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME or not _NAME.match(value):
        raise invalid_request(
            f"'name' takes 1-{MAX_NAME} letters, digits, spaces, '.', '_' or '-'.",
            param="name",
            value=value,
        )
    if value in builtin_templates():
        raise ApiError(
            409,
            "template_name_taken",
            f"'{value}' is a built-in template; a custom one needs a name of its own.",
            param="name",
            value=value,
        )
    return value


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_request(f"'{param}' must be an object.", param=param, value=value)
    return value


def _text(value: Any, param: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise invalid_request(
            f"'{param}' must be a string of at most {limit} characters.", param=param
        )
    return value


def _only(data: dict[str, Any], allowed: set[str], param: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise invalid_request(
            f"Unknown field '{param}.{unknown[0]}'.", param=f"{param}.{unknown[0]}"
        )


def _stt(data: dict[str, Any], catalog: Catalog) -> SttSettings:
    _only(data, {"model", "language"}, "stt")
    language = data.get("language")
    if language is not None and (not isinstance(language, str) or not 2 <= len(language) <= 10):
        raise invalid_request("'stt.language' must be a language code.", param="stt.language")
    model = checked_model(catalog, data.get("model"), "transcription", "stt.model")
    return SttSettings(model=model, language=language)


def _llm(data: dict[str, Any], catalog: Catalog) -> LlmSettings:
    _only(data, {"model", "system_prompt", "max_tokens", "temperature"}, "llm")
    model = checked_model(catalog, data.get("model"), "chat", "llm.model")
    prompt = _text(data.get("system_prompt"), "llm.system_prompt", MAX_PROMPT)
    max_tokens = data.get("max_tokens", 300)
    if (
        isinstance(max_tokens, bool)
        or not isinstance(max_tokens, int)
        or not 1 <= max_tokens <= MAX_TOKENS
    ):
        raise invalid_request(
            f"'llm.max_tokens' must be an integer from 1 to {MAX_TOKENS}.",
            param="llm.max_tokens",
            value=max_tokens,
        )
    temperature = data.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        raise invalid_request(
            "'llm.temperature' must be a number from 0 to 2.",
            param="llm.temperature",
            value=temperature,
        )
    return LlmSettings(
        model, prompt, max_tokens, None if temperature is None else float(temperature)
    )


def _tts(data: dict[str, Any], catalog: Catalog) -> TtsSettings:
    _only(data, {"model", "voice", "speed", "format"}, "tts")
    model = checked_model(catalog, data.get("model"), "speech", "tts.model")
    voice = data.get("voice")
    if not isinstance(voice, str) or not voice:
        raise invalid_request("'tts.voice' is required.", param="tts.voice", value=voice)
    speed = check_speed(data.get("speed", 1.0), "tts.speed")
    audio_format = data.get("format", "mp3")
    if audio_format not in AUDIO_FORMATS:
        raise invalid_request(
            f"'tts.format' must be one of {', '.join(AUDIO_FORMATS)}.",
            param="tts.format",
            value=audio_format,
        )
    return TtsSettings(model=model, voice=voice, speed=speed, format=audio_format)


def check_speed(value: Any, param: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.25 <= value <= 4.0:
        raise invalid_request(
            f"'{param}' must be a number from 0.25 to 4.0.", param=param, value=value
        )
    return float(value)
