"""Pipeline templates: what each stage of a pipeline calls, and with which settings.

Built-in templates live in `templates.json` beside this module (the data, not code);
custom ones are a workspace's records (`store.pipeline_templates`) holding the same
shape. A template is frozen once read; a request's `overrides` make a new one
(`with_overrides`). Validation of a custom template's fields lives in
`gateway.pipelines.template_input`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Literal

import attrs

from providers.audio_types import SPEECH_FORMATS, SpeechFormat

Kind = Literal["agent", "scribe", "legal"]
KINDS: tuple[Kind, ...] = ("agent", "scribe", "legal")
# The format of an answer's audio. Speech is asked of the vendors as raw PCM (16-bit,
# 24 kHz, mono) sentence by sentence, which concatenates; a whole answer is encoded once
# at the end, a stream by one encoder fed as the sentences arrive (`encoding`).
AudioFormat = SpeechFormat
AUDIO_FORMATS: tuple[AudioFormat, ...] = SPEECH_FORMATS


@attrs.frozen
class SttSettings:
    model: str
    language: str | None = None
    prompt: str | None = None  # a Realtime session's transcription prompt (not stored)


@attrs.frozen
class LlmSettings:
    model: str
    system_prompt: str = ""
    max_tokens: int = 300
    temperature: float | None = None


@attrs.frozen
class TtsSettings:
    model: str
    voice: str
    speed: float = 1.0
    format: AudioFormat = "mp3"


@attrs.frozen
class Template:
    """One template; `tts` None for templates whose answer is text (scribe, dictation)."""

    id: str
    name: str
    kind: Kind
    stt: SttSettings
    llm: LlmSettings
    tts: TtsSettings | None
    description: str = ""
    builtin: bool = False


def template_from_json(data: Mapping[str, Any], *, builtin: bool) -> Template:
    """A template from its stored JSON shape (trusted: validated when it was written)."""
    tts = data.get("tts")
    return Template(
        id=data["id"],
        name=data["name"],
        kind=data.get("kind", "agent"),
        description=data.get("description", ""),
        stt=SttSettings(**data["stt"]),
        llm=LlmSettings(**data["llm"]),
        tts=TtsSettings(**tts) if tts else None,
        builtin=builtin,
    )


def template_to_json(template: Template) -> dict[str, Any]:
    """The stored (and rendered) shape of a template's stage settings."""
    return {
        "id": template.id,
        "name": template.name,
        "kind": template.kind,
        "description": template.description,
        "stt": attrs.asdict(template.stt, filter=_stored),
        "llm": attrs.asdict(template.llm),
        "tts": attrs.asdict(template.tts) if template.tts else None,
    }


def _stored(field: attrs.Attribute[object], value: object) -> bool:
    """A session's transcription prompt lives with the session, not in the template."""
    return field.name != "prompt"


@cache
def builtin_templates() -> Mapping[str, Template]:
    """The built-in templates by id (read once; immutable)."""
    text = resources.files("gateway.pipelines").joinpath("templates.json").read_text("utf-8")
    entries = json.loads(text)["templates"]
    return {e["id"]: template_from_json(e, builtin=True) for e in entries}


@attrs.frozen
class Overrides:
    """A request's `overrides`: the LLM's model and length, the voice and its speed."""

    llm_model: str | None = None
    llm_max_tokens: int | None = None
    tts_voice: str | None = None
    tts_speed: float | None = None


def with_overrides(template: Template, overrides: Overrides, context: str | None) -> Template:
    """The template a request runs: its overrides applied, `context` as the system prompt
    (appended to the template's own, which keeps the stage's instructions)."""
    llm = template.llm
    if overrides.llm_model is not None:
        llm = attrs.evolve(llm, model=overrides.llm_model)
    if overrides.llm_max_tokens is not None:
        llm = attrs.evolve(llm, max_tokens=overrides.llm_max_tokens)
    if context:
        prompt = f"{llm.system_prompt}\n\n{context}" if llm.system_prompt else context
        llm = attrs.evolve(llm, system_prompt=prompt)
    tts = template.tts
    if tts is not None and overrides.tts_voice is not None:
        tts = attrs.evolve(tts, voice=overrides.tts_voice)
    if tts is not None and overrides.tts_speed is not None:
        tts = attrs.evolve(tts, speed=overrides.tts_speed)
    return attrs.evolve(template, llm=llm, tts=tts)
