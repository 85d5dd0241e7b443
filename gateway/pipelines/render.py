"""The pipeline's answers as the client sees them (pure): the streamed events as NDJSON
lines, the whole result by template kind, and template records."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, TypedDict, cast

import orjson

from gateway.kernels.voice.flow import Event, Trace
from gateway.pipelines.templates import AudioFormat, Template, template_to_json
from gateway.platform.answers import Time
from gateway.platform.shapes import Choices, Doc


class TokenCounts(TypedDict):
    prompt: int
    completion: int


class PipelineUsage(TypedDict):
    """What the stages used."""

    stt_seconds: float
    llm_tokens: TokenCounts
    tts_characters: int


class PipelineLatency(TypedDict):
    """Each stage's time and the whole run's, and the time to the first audio."""

    stt_ms: int
    llm_ms: int
    tts_ms: int
    total_ms: int
    first_audio_ms: NotRequired[int]


class StageProviders(TypedDict):
    """The provider that served each stage (null: the stage did not run)."""

    stt: str | None
    llm: str | None
    tts: str | None


class PipelineResult(TypedDict):
    """A run's result: the transcription, the answer, and its speech as base64 in the
    template's format (null for a text-only template)."""

    id: str
    object: Literal["audio.pipeline"]
    template: str
    transcription: str
    response: str
    audio: str | None
    audio_format: AudioFormat | None
    usage: PipelineUsage
    latency: PipelineLatency
    providers: StageProviders


class ClinicalNote(TypedDict):
    chief_complaint: str | None
    duration: str | None
    symptoms: list[str]
    medications_mentioned: list[str]
    allergies_mentioned: list[str]
    vital_signs: dict[str, str | float] | None


class PiiFound(TypedDict):
    type: str
    value: Annotated[str, Doc("Masked")]
    confidence: float


class Compliance(TypedDict):
    hipaa: bool
    audit_logged: bool


class ScribeResult(TypedDict):
    """An ambient scribe's result: the structured note instead of a spoken answer."""

    id: str
    object: Literal["audio.pipeline"]
    template: str
    transcription: str
    structured_note: ClinicalNote
    pii_detected: list[PiiFound]
    audit_id: str | None
    compliance: Compliance
    usage: PipelineUsage
    latency: PipelineLatency
    providers: StageProviders


class SttSettingsBody(TypedDict):
    model: str
    language: str | None


class LlmSettingsBody(TypedDict):
    model: str
    system_prompt: str
    max_tokens: int
    temperature: float | None


class TtsSettingsBody(TypedDict):
    model: str
    voice: str
    speed: float
    format: AudioFormat


class PipelineTemplate(TypedDict):
    """A pipeline template: its stages' settings, whether it is built in, and when a
    custom one was made and changed. `tts` null: the answer is text only."""

    id: str
    object: Literal["pipeline_template"]
    name: str
    kind: Annotated[str, Choices(("agent", "scribe", "legal"))]
    description: str
    builtin: bool
    created_at: Time | None
    updated_at: NotRequired[Time]
    stt: SttSettingsBody
    llm: LlmSettingsBody
    tts: TtsSettingsBody | None


class TemplateList(TypedDict):
    """The built-in templates, then the workspace's own (`templates`: the same list)."""

    object: Literal["list"]
    data: list[PipelineTemplate]
    templates: list[PipelineTemplate]


def event_line(event: Event) -> bytes:
    """One event as a JSON line; audio goes out as base64."""
    if event["type"] == "audio.chunk":
        event = {"type": "audio.chunk", "data": base64.b64encode(event["data"]).decode()}
    return orjson.dumps(event) + b"\n"


def result_body(
    pipeline_id: str,
    template: Template,
    trace: Trace,
    usage: Mapping[str, Any],
    extra: Mapping[str, Any],
    audio: bytes | None,
) -> PipelineResult | ScribeResult:
    """The spec's Pipeline result: the standard one, or the ambient scribe's (`extra`:
    what the template's post-processing added to the `done` event)."""
    metered = cast(PipelineUsage, dict(usage))
    latency = cast(PipelineLatency, trace.latency())
    providers: StageProviders = {
        "stt": trace.providers.get("stt"),
        "llm": trace.providers.get("llm"),
        "tts": trace.providers.get("tts"),
    }
    if template.kind == "scribe":
        return {
            "id": pipeline_id,
            "object": "audio.pipeline",
            "template": template.id,
            "transcription": trace.transcript,
            "structured_note": extra["structured_note"],
            "pii_detected": extra["pii_detected"],
            "audit_id": extra["audit_id"],
            "compliance": extra["compliance"],
            "usage": metered,
            "latency": latency,
            "providers": providers,
        }
    return {
        "id": pipeline_id,
        "object": "audio.pipeline",
        "template": template.id,
        "transcription": trace.transcript,
        "response": extra.get("document", trace.response),
        "audio": base64.b64encode(audio).decode() if audio is not None else None,
        "audio_format": template.tts.format if template.tts is not None else None,
        "usage": metered,
        "latency": latency,
        "providers": providers,
    }


def template_body(template: Template, created_at: str | None = None) -> PipelineTemplate:
    """A template record: its stage settings, whether it is built in, and when it was
    made (custom ones)."""
    stages = template_to_json(template)
    return {
        "id": template.id,
        "object": "pipeline_template",
        "name": template.name,
        "kind": template.kind,
        "description": template.description,
        "builtin": template.builtin,
        "created_at": created_at,
        "stt": stages["stt"],
        "llm": stages["llm"],
        "tts": stages["tts"],
    }
