from __future__ import annotations

import re
from typing import Annotated, Any

import attrs

from gateway.pipelines.templates import (
    AudioFormat,
    LlmSettings,
    SttSettings,
    TtsSettings,
    builtin_templates,
)
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import NOT_NULL, Doc, Length, Pattern, Range, parse
from providers.catalog import Catalog
from providers.voices import VoiceCatalog

MAX_NAME = 64
MAX_PROMPT = 8000
MAX_DESCRIPTION = 500
MAX_TOKENS = 4096
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")

Model = Annotated[str, Length(least=1), Doc("A model of the catalog for the stage")]
Language = Annotated[str, Length(least=2, most=10), Doc("A language code")]
Prompt = Annotated[str, Length(most=MAX_PROMPT)]
MaxTokens = Annotated[int, Range(least=1, most=MAX_TOKENS)]
Temperature = Annotated[float, Range(least=0, most=2)]
Voice = Annotated[str, Length(least=1), Doc("A standard voice, a catalog voice or a mapping")]
Speed = Annotated[float, Range(least=0.25, most=4.0)]
Name = Annotated[
    str,
    Length(least=1, most=MAX_NAME),
    Pattern(_NAME.pattern, "letters, digits, spaces, '.', '_' or '-'"),
]
Description = Annotated[str, Length(most=MAX_DESCRIPTION)] | None


@attrs.frozen(kw_only=True)
class SttStage:
    """Speech to text."""

    model: Model
    language: Language | None = None


@attrs.frozen(kw_only=True)
class LlmStage:
    """The language model."""

    model: Model
    system_prompt: Prompt | None = None
    max_tokens: MaxTokens = 300
    temperature: Temperature | None = None


@attrs.frozen(kw_only=True)
class TtsStage:
    """Text to speech."""

    model: Model
    voice: Voice
    speed: Speed = 1.0
    format: AudioFormat = "mp3"


@attrs.frozen(kw_only=True)
class TemplateSpec:
    """A custom pipeline template, whole (create, replace). `tts` null: a template whose
    answer is text only."""

    name: Name
    description: Description = None
    stt: SttStage
    llm: LlmStage
    tts: TtsStage | None


@attrs.frozen(kw_only=True)
class SttChange:
    model: Annotated[Model | None, NOT_NULL] = None
    language: Language | None = None


@attrs.frozen(kw_only=True)
class LlmChange:
    model: Annotated[Model | None, NOT_NULL] = None
    system_prompt: Prompt | None = None
    max_tokens: Annotated[MaxTokens | None, NOT_NULL] = None
    temperature: Temperature | None = None


@attrs.frozen(kw_only=True)
class TtsChange:
    model: Annotated[Model | None, NOT_NULL] = None
    voice: Annotated[Voice | None, NOT_NULL] = None
    speed: Annotated[Speed | None, NOT_NULL] = None
    format: Annotated[AudioFormat | None, NOT_NULL] = None


@attrs.frozen(kw_only=True)
class TemplateChange:
    """A change of a custom template: the fields given. A stage object is laid over the
    template's current one (`{"llm": {"max_tokens": 60}}` keeps the model); a stage the
    template lacks is given whole. `tts` null makes the answer text only."""

    name: Annotated[Name | None, NOT_NULL] = None
    description: Description = None
    stt: Annotated[SttChange | None, NOT_NULL] = None
    llm: Annotated[LlmChange | None, NOT_NULL] = None
    tts: TtsChange | None = None


Stage = SttStage | LlmStage | TtsStage | SttChange | LlmChange | TtsChange


def parse_template_fields(body: Any, catalog: Catalog, *, partial: bool = False) -> dict[str, Any]:
    """The fields of a create (`TemplateSpec`) or an update (`partial`: a `TemplateChange`,
    its stages already laid over the current ones: `custom.merged_stages`), as template
    parts: `name`, `description`, `stt`, `llm`, `tts`, those present."""
    spec: TemplateSpec | TemplateChange
    spec = parse(TemplateChange, body) if partial else parse(TemplateSpec, body)
    found: dict[str, Any] = {}
    if spec.name is not None:
        found["name"] = _name(spec.name)
    if "description" in body or not partial:
        found["description"] = spec.description or ""
    if spec.stt is not None:
        found["stt"] = SttSettings(
            model=checked_model(catalog, _given(spec.stt, "stt"), "transcription", "stt.model"),
            language=spec.stt.language,
        )
    if spec.llm is not None:
        found["llm"] = _llm(spec.llm, catalog)
    if "tts" in body or not partial:
        found["tts"] = None if spec.tts is None else _tts(spec.tts, catalog)
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


def _name(value: str) -> str:
    if value in builtin_templates():
        raise ApiError(
            409,
            "template_name_taken",
            f"'{value}' is a built-in template; a custom one needs a name of its own.",
            param="name",
            value=value,
        )
    return value


def _given(stage: Stage, name: str) -> str:
    """A stage's model: a stage the template lacks is given whole by a change too."""
    if stage.model is None:
        raise invalid_request(f"'{name}.model' is required.", param=f"{name}.model")
    return stage.model


def _llm(stage: LlmStage | LlmChange, catalog: Catalog) -> LlmSettings:
    model = checked_model(catalog, _given(stage, "llm"), "chat", "llm.model")
    max_tokens = 300 if stage.max_tokens is None else stage.max_tokens
    return LlmSettings(model, stage.system_prompt or "", max_tokens, stage.temperature)


def _tts(stage: TtsStage | TtsChange, catalog: Catalog) -> TtsSettings:
    model = checked_model(catalog, _given(stage, "tts"), "speech", "tts.model")
    if stage.voice is None:
        raise invalid_request("'tts.voice' is required.", param="tts.voice")
    return TtsSettings(
        model=model,
        voice=stage.voice,
        speed=1.0 if stage.speed is None else stage.speed,
        format=stage.format or "mp3",
    )
