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
from typing import Annotated, Any

import attrs

from gateway.pipelines.template_input import MaxTokens, Model, Speed, Voice
from gateway.pipelines.templates import Overrides
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import NOT_NULL, Choices, Doc, Format, Length, parse

MAX_AUDIO_BYTES = 25 * 1024 * 1024  # the audio a pipeline takes (the spec's transcription bound)
MAX_CONTEXT = 8000  # characters of `context`
BODY_LIMIT = MAX_AUDIO_BYTES * 4 // 3 + 1024 * 1024  # base64 audio plus the other fields


@attrs.frozen(kw_only=True)
class LlmOverride:
    model: Model | None = None
    max_tokens: MaxTokens | None = None


@attrs.frozen(kw_only=True)
class TtsOverride:
    voice: Voice | None = None
    speed: Speed | None = None


@attrs.frozen(kw_only=True)
class PipelineOverrides:
    """This run's changes to the template: the language model and its length, the voice
    and its speed."""

    llm: LlmOverride | None = None
    tts: TtsOverride | None = None


TemplateId = Annotated[
    str, Length(least=1), Doc("A built-in template id, or a custom one's id or name")
]
Context = Annotated[str, Length(most=MAX_CONTEXT), Doc("Added to the template's system prompt")]


@attrs.frozen(kw_only=True)
class PipelineBody:
    """A pipeline run as JSON, the audio as base64."""

    audio: Annotated[
        str, Length(least=1), Doc("The audio as base64 (25 MB decoded at most), or a data: URL")
    ]
    template: TemplateId
    context: Context | None = None
    stream: Annotated[bool, Doc("Answer NDJSON events as they come")] = False
    overrides: PipelineOverrides | None = None


@attrs.frozen(kw_only=True)
class PipelineParts:
    """A pipeline run as multipart/form-data (`audio` a file, or base64 text)."""

    audio: Annotated[str, Format("binary"), Length(least=1)]
    template: TemplateId
    context: Annotated[Context | None, NOT_NULL] = None
    stream: Annotated[str | None, Choices(("true", "false")), NOT_NULL] = None
    overrides: Annotated[
        PipelineOverrides | None, NOT_NULL, Doc("Sent as the JSON text of the object")
    ] = None


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
    asked = parse(PipelineBody, body)
    params = PipelineParams(
        asked.template, asked.context or None, asked.stream, _overrides(asked.overrides)
    )
    return params, base64_audio(asked.audio)


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
    """A form's fields, read as the JSON body's are."""
    if not isinstance(template, str) or not template:
        raise invalid_request("'template' is required: a template id.", param="template")
    if context is not None and len(context) > MAX_CONTEXT:
        raise invalid_request(
            f"'context' must be text of at most {MAX_CONTEXT} characters.", param="context"
        )
    found = None if overrides is None else parse(PipelineOverrides, overrides, at="overrides")
    return PipelineParams(template, context or None, stream, _overrides(found))


def _overrides(value: PipelineOverrides | None) -> Overrides:
    llm = (value.llm if value else None) or LlmOverride()
    tts = (value.tts if value else None) or TtsOverride()
    return Overrides(
        llm_model=llm.model,
        llm_max_tokens=llm.max_tokens,
        tts_voice=tts.voice,
        tts_speed=tts.speed,
    )
