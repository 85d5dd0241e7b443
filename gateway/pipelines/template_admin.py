"""The management of a workspace's custom pipeline templates: listed with the built-in
ones, created, read, changed or replaced, deleted. Each change is written with its audit
event in one transaction (`gateway.platform.audit.audited`); built-in templates are read
only (400 `builtin_template`), and a name is one template's in a workspace (409)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import sqlite_utils

from gateway.pipelines import custom
from gateway.pipelines.render import PipelineTemplate, TemplateList, template_body
from gateway.pipelines.services import PipelinesServices
from gateway.pipelines.template_input import parse_template_fields, unknown_voice, voice_known
from gateway.pipelines.templates import builtin_templates
from gateway.platform.audit import audit_event, audited, written
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from providers.voices import load_voices
from store import pipeline_templates
from store.audit import AuditEvent
from store.columns import to_iso
from store.pipeline_templates import NameTakenError, PipelineTemplateRecord


async def listing(services: PipelinesServices, principal: Principal) -> TemplateList:
    """The built-in templates, then the workspace's own."""
    ws = principal.workspace_id
    records = await services.db.run(lambda d: pipeline_templates.list_for_workspace(d, ws))
    data = [template_body(t) for t in builtin_templates().values()]
    data += [_record_body(r) for r in records]
    return {"object": "list", "data": data, "templates": data}


async def create(
    services: PipelinesServices, principal: Principal, body: dict[str, Any]
) -> PipelineTemplate:
    """A new custom template of the workspace's, from the request's fields."""
    fields = parse_template_fields(body, services.catalog)
    await _check_voice(services, principal, fields)
    record = custom.new_record(principal.workspace_id, fields)
    return await _saved(services, principal, "created", record, pipeline_templates.insert)


async def read(
    services: PipelinesServices, principal: Principal, template_id: str
) -> PipelineTemplate:
    """A built-in template, else the workspace's custom one by id (404 otherwise)."""
    builtin = builtin_templates().get(template_id)
    if builtin is not None:
        return template_body(builtin)
    return _record_body(await _record(services, principal, template_id))


async def change(
    services: PipelinesServices,
    principal: Principal,
    template_id: str,
    read_body: Callable[[], Awaitable[dict[str, Any]]],
    *,
    partial: bool,
) -> PipelineTemplate:
    """A PATCH (`partial`: the stages given are laid over the current ones) or a PUT. The
    body is read once the template is found: a built-in or unknown one is refused first,
    whatever the body."""
    _refuse_builtin(template_id)
    record = await _record(services, principal, template_id)
    body = await read_body()
    if partial:
        body = custom.merged_stages(body, dict(_record_body(record)))
    fields = parse_template_fields(body, services.catalog, partial=partial)
    await _check_voice(services, principal, fields)
    changed = custom.updated(record, fields)
    return await _saved(services, principal, "updated", changed, pipeline_templates.replace)


async def _saved(
    services: PipelinesServices,
    principal: Principal,
    change: str,
    record: PipelineTemplateRecord,
    write: Callable[[sqlite_utils.Database, PipelineTemplateRecord], object],
) -> PipelineTemplate:
    """`record` written (`write`: the store's insert or replace) in one transaction with
    its audit event (`pipeline_template.<change>`); a name the workspace has given another
    template is 409 `template_name_taken`."""
    event = _template_event(principal, f"pipeline_template.{change}", record.id, record.name)
    try:
        await audited(services.db, event, written(lambda d: write(d, record)))
    except NameTakenError:
        raise _name_taken(record.name) from None
    return _record_body(record)


async def delete(
    services: PipelinesServices, principal: Principal, template_id: str
) -> dict[str, Any]:
    """The custom template erased (404 for one the workspace does not have)."""
    _refuse_builtin(template_id)
    ws = principal.workspace_id
    event = _template_event(principal, "pipeline_template.deleted", template_id, None)
    if not await audited(
        services.db, event, lambda d: pipeline_templates.delete(d, ws, template_id)
    ):
        raise custom.template_not_found(template_id)
    return {"id": template_id, "object": "pipeline_template", "deleted": True}


async def _record(
    services: PipelinesServices, principal: Principal, template_id: str
) -> PipelineTemplateRecord:
    ws = principal.workspace_id
    record = await services.db.run(lambda d: pipeline_templates.get(d, ws, template_id))
    if record is None or record.id != template_id:
        raise custom.template_not_found(template_id)
    return record


def _record_body(record: PipelineTemplateRecord) -> PipelineTemplate:
    body = template_body(custom.record_template(record), to_iso(record.created_at))
    body["updated_at"] = to_iso(record.updated_at)
    return body


async def _check_voice(
    services: PipelinesServices, principal: Principal, fields: dict[str, object]
) -> None:
    tts = fields.get("tts")
    voice = getattr(tts, "voice", None)
    if voice is None or voice_known(load_voices(), voice):
        return
    if await services.voice.voice_mapping(principal.workspace_id, voice) is None:
        raise unknown_voice(voice)


def _refuse_builtin(template_id: str) -> None:
    if template_id in builtin_templates():
        raise ApiError(
            400,
            "builtin_template",
            f"'{template_id}' is a built-in template; it cannot be changed or deleted.",
            param="template_id",
        )


def _name_taken(name: str) -> ApiError:
    return ApiError(
        409, "template_name_taken", f"A pipeline template named '{name}' exists.", param="name"
    )


def _template_event(
    principal: Principal, kind: str, template_id: str, name: str | None
) -> AuditEvent:
    details = {"name": name} if name is not None else None
    return audit_event(
        principal, kind, target_type="pipeline_template", target_id=template_id, details=details
    )
