"""The pipeline's answers as the client sees them (pure): the streamed events as NDJSON
lines, the whole result by template kind, and template records."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import orjson

from gateway.kernels.voice.flow import Event, Trace
from gateway.pipelines.templates import Template, template_to_json


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
) -> dict[str, Any]:
    """The spec's Pipeline result: the standard one, or the ambient scribe's."""
    common = {"id": pipeline_id, "object": "audio.pipeline", "template": template.id}
    tail = {
        "usage": dict(usage),
        "latency": trace.latency(),
        "providers": {stage: trace.providers.get(stage) for stage in ("stt", "llm", "tts")},
    }
    if template.kind == "scribe":
        return common | {"transcription": trace.transcript} | dict(extra) | tail
    response = extra.get("document", trace.response)
    return (
        common
        | {
            "transcription": trace.transcript,
            "response": response,
            "audio": base64.b64encode(audio).decode() if audio is not None else None,
            "audio_format": template.tts.format if template.tts is not None else None,
        }
        | tail
    )


def template_body(template: Template, created_at: str | None = None) -> dict[str, Any]:
    """A template record: its stage settings, whether it is built in, and when it was
    made (custom ones)."""
    body = template_to_json(template) | {"object": "pipeline_template", "builtin": template.builtin}
    body["created_at"] = created_at
    return body
