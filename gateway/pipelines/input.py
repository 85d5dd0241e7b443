"""The fields of `POST /v1/audio/pipelines`, from a multipart form or a JSON body (pure).

multipart/form-data: an `audio` file part (or base64 text field), and text fields
`template`, `context`, `stream` (`true`/`false`) and `overrides` (a JSON object as text).
JSON: the same fields, `audio` as base64 text. Audio over `MAX_AUDIO_BYTES` is a 413;
anything else wrong is a 400 naming the field. Unknown templates are the service's to answer (404).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import attrs

from gateway.pipelines.template_input import MAX_TOKENS, check_speed
from gateway.pipelines.templates import Overrides
from gateway.platform.errors import ApiError, invalid_request

MAX_AUDIO_BYTES = 25 * 1024 * 1024  # the audio a pipeline takes (the spec's transcription bound)
MAX_CONTEXT = 8000  # characters of `context`
BODY_LIMIT = MAX_AUDIO_BYTES * 4 // 3 + 1024 * 1024  # base64 audio plus the other fields


@attrs.frozen
class PipelineParams:
    template: str
    context: str | None = None
    stream: bool = False
    overrides: Overrides = attrs.field(factory=Overrides)


def too_large() -> ApiError:
    return ApiError(
        413,
        "file_too_large",
        f"The audio is over {MAX_AUDIO_BYTES // (1024 * 1024)} MB.",
        param="audio",
    )


def parse_form(fields: Mapping[str, list[str]]) -> PipelineParams:
    """The text fields of a multipart request."""

    def last(name: str) -> str | None:
        values = fields.get(name)
        return values[-1] if values else None

    overrides_text = last("overrides")
    overrides: Any = None
    if overrides_text:
        try:
            overrides = json.loads(overrides_text)
        except ValueError:
            raise invalid_request(
                "'overrides' must be a JSON object.", param="overrides", value=overrides_text
            ) from None
    stream = (last("stream") or "false").lower()
    if stream not in ("true", "false"):
        raise invalid_request("'stream' must be true or false.", param="stream", value=stream)
    return _params(last("template"), last("context"), stream == "true", overrides)


def parse_json(body: Any) -> tuple[PipelineParams, bytes]:
    """The fields of a JSON request and its decoded audio."""
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid_request("'stream' must be a boolean.", param="stream", value=stream)
    params = _params(body.get("template"), body.get("context"), stream, body.get("overrides"))
    return params, base64_audio(body.get("audio"))


def base64_audio(value: Any) -> bytes:
    """The audio of base64 text (a `data:` URL too): JSON's `audio`, or a multipart
    `audio` sent as a text field (the spec: "file or base64 string")."""
    if not isinstance(value, str) or not value:
        raise invalid_request("'audio' is required: the audio as base64 text.", param="audio")
    if len(value) > MAX_AUDIO_BYTES * 4 // 3 + 4:
        raise too_large()
    text = value.split(",", 1)[1] if value.startswith("data:") else value  # a data: URL
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(
            400, "invalid_audio", "'audio' is not valid base64.", param="audio"
        ) from None


def _params(template: Any, context: Any, stream: bool, overrides: Any) -> PipelineParams:
    if not isinstance(template, str) or not template:
        raise invalid_request("'template' is required: a template id.", param="template")
    if context is not None and (not isinstance(context, str) or len(context) > MAX_CONTEXT):
        raise invalid_request(
            f"'context' must be text of at most {MAX_CONTEXT} characters.", param="context"
        )
    return PipelineParams(template, context or None, stream, _overrides(overrides))


def _overrides(value: Any) -> Overrides:
    if value is None:
        return Overrides()
    if not isinstance(value, dict) or set(value) - {"llm", "tts"}:
        raise invalid_request(
            "'overrides' takes 'llm' {model, max_tokens} and 'tts' {voice, speed}.",
            param="overrides",
        )
    llm, tts = value.get("llm") or {}, value.get("tts") or {}
    if not isinstance(llm, dict) or set(llm) - {"model", "max_tokens"}:
        raise invalid_request(
            "'overrides.llm' takes 'model' and 'max_tokens'.", param="overrides.llm"
        )
    if not isinstance(tts, dict) or set(tts) - {"voice", "speed"}:
        raise invalid_request("'overrides.tts' takes 'voice' and 'speed'.", param="overrides.tts")
    return Overrides(
        llm_model=_text(llm.get("model"), "overrides.llm.model"),
        llm_max_tokens=_max_tokens(llm.get("max_tokens")),
        tts_voice=_text(tts.get("voice"), "overrides.tts.voice"),
        tts_speed=None
        if tts.get("speed") is None
        else check_speed(tts["speed"], "overrides.tts.speed"),
    )


def _text(value: Any, param: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise invalid_request(f"'{param}' must be a non-empty string.", param=param, value=value)
    return value


def _max_tokens(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise invalid_request(
            f"'overrides.llm.max_tokens' must be an integer from 1 to {MAX_TOKENS}.",
            param="overrides.llm.max_tokens",
            value=value,
        )
    return value
