"""Finding a template by id (built-in, or the workspace's by id or name) and turning
custom template records into templates and back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs

from gateway.pipelines.services import PipelinesServices
from gateway.pipelines.templates import Template, builtin_templates, template_from_json
from gateway.platform.errors import ApiError, not_found
from store import pipeline_templates
from store.pipeline_templates import PipelineTemplateRecord


def template_not_found(template_id: str) -> ApiError:
    return not_found(
        "template_not_found",
        f"No pipeline template '{template_id}': use a built-in one "
        f"({', '.join(builtin_templates())}) or one of GET /v1/management/pipeline-templates.",
        param="template",
    )


async def find_template(
    services: PipelinesServices, workspace_id: str, template_id: str
) -> Template:
    """The built-in template, else the workspace's by id or name; 404 otherwise (another
    workspace's template answers exactly like an unknown one)."""
    builtin = builtin_templates().get(template_id)
    if builtin is not None:
        return builtin
    record = await services.db.run(lambda d: pipeline_templates.get(d, workspace_id, template_id))
    if record is None:
        raise template_not_found(template_id)
    return record_template(record)


def record_template(record: PipelineTemplateRecord) -> Template:
    stages = dict(record.stages)
    return template_from_json(
        stages | {"id": record.id, "name": record.name, "description": record.description},
        builtin=False,
    )


def _stages(fields: dict[str, Any]) -> dict[str, Any]:
    tts = fields["tts"]
    return {
        "kind": "agent",
        "stt": attrs.asdict(fields["stt"]),
        "llm": attrs.asdict(fields["llm"]),
        "tts": attrs.asdict(tts) if tts is not None else None,
    }


def new_record(workspace_id: str, fields: dict[str, Any]) -> PipelineTemplateRecord:
    now = datetime.now(UTC)
    return PipelineTemplateRecord(
        workspace_id=workspace_id,
        name=fields["name"],
        description=fields["description"],
        stages=_stages(fields),
        created_at=now,
        updated_at=now,
    )


def merged_stages(body: Any, current: dict[str, Any]) -> Any:
    """A PATCH body whose stage objects (`stt`, `llm`, `tts`) are laid over the template's
    current ones, so `{"llm": {"max_tokens": 60}}` changes that one field and keeps the
    model (a PUT, or a stage the template lacks, still needs the stage whole)."""
    if not isinstance(body, dict):
        return body
    merged = dict(body)
    for stage in ("stt", "llm", "tts"):
        given, now = body.get(stage), current.get(stage)
        if isinstance(given, dict) and isinstance(now, dict):
            merged[stage] = now | given
    return merged


def updated(record: PipelineTemplateRecord, fields: dict[str, Any]) -> PipelineTemplateRecord:
    """`record` with the fields of an update applied (the rest kept)."""
    current = record_template(record)
    merged: dict[str, Any] = {
        "name": record.name,
        "description": record.description,
        "stt": current.stt,
        "llm": current.llm,
        "tts": current.tts,
    } | fields
    return attrs.evolve(
        record,
        name=merged["name"],
        description=merged["description"],
        stages=_stages(merged),
        updated_at=datetime.now(UTC),
    )
