"""A workspace's voice mappings: create, list, read, update (whole or partial), delete.

Orchestration only: validation and the answer's shape are in `gateway.audio.voices`, SQL
in `store.voice_mappings`. Every change writes its audit event in the change's own
transaction; a mapping of another workspace answers 404 exactly like an unknown id.
"""

from __future__ import annotations

from typing import Any

from gateway.audio import voices as voice_views
from gateway.audio.services import AudioServices
from gateway.platform.answers import Deleted
from gateway.platform.audit import audit_event, audited, written
from gateway.platform.auth import Principal
from providers.voices import load_voices
from store import voice_mappings
from store.voice_mappings import NameTakenError, VoiceMappingRecord


async def create(
    services: AudioServices, principal: Principal, body: dict[str, Any]
) -> voice_views.VoiceMapping:
    """A new mapping; 409 when the workspace already has one of that name."""
    fields = voice_views.parse_mapping(body, load_voices(), services.catalog)
    record = voice_views.new_record(principal.workspace_id, fields)
    event = audit_event(
        principal,
        "voice_mapping.created",
        target_type="voice_mapping",
        target_id=record.id,
        details={"name": record.name},
    )
    try:
        await audited(services.db, event, written(lambda d: voice_mappings.insert(d, record)))
    except NameTakenError:
        raise voice_views.name_taken(record.name) from None
    services.voice_mappings.changed(principal.workspace_id)
    return voice_views.mapping_body(record)


async def list_mappings(services: AudioServices, principal: Principal) -> voice_views.MappingList:
    ws = principal.workspace_id
    records = await services.db.run(lambda d: voice_mappings.list_for_workspace(d, ws))
    data = [voice_views.mapping_body(r) for r in records]
    return {"object": "list", "data": data, "voice_mappings": data}


async def read(
    services: AudioServices, principal: Principal, mapping_id: str
) -> voice_views.VoiceMapping:
    return voice_views.mapping_body(await _mapping(services, principal, mapping_id))


async def update(
    services: AudioServices,
    principal: Principal,
    mapping_id: str,
    body: dict[str, Any],
    *,
    partial: bool,
) -> voice_views.VoiceMapping:
    """Change a mapping: `partial` (PATCH) keeps the fields not sent, else (PUT) the body
    is the whole mapping; 409 when the new name is taken."""
    record = await _mapping(services, principal, mapping_id)
    fields = voice_views.parse_mapping(body, load_voices(), services.catalog, partial=partial)
    changed = voice_views.updated(record, fields)
    event = audit_event(
        principal,
        "voice_mapping.updated",
        target_type="voice_mapping",
        target_id=record.id,
        details={"fields": sorted(fields)},
    )
    try:
        await audited(services.db, event, written(lambda d: voice_mappings.replace(d, changed)))
    except NameTakenError:
        raise voice_views.name_taken(changed.name) from None
    services.voice_mappings.changed(principal.workspace_id)
    return voice_views.mapping_body(changed)


async def delete(services: AudioServices, principal: Principal, mapping_id: str) -> Deleted:
    ws = principal.workspace_id
    event = audit_event(
        principal, "voice_mapping.deleted", target_type="voice_mapping", target_id=mapping_id
    )
    if not await audited(services.db, event, lambda d: voice_mappings.delete(d, ws, mapping_id)):
        raise voice_views.mapping_not_found(mapping_id)
    services.voice_mappings.changed(ws)
    return {"id": mapping_id, "object": "voice_mapping", "deleted": True}


async def _mapping(
    services: AudioServices, principal: Principal, mapping_id: str
) -> VoiceMappingRecord:
    ws = principal.workspace_id
    record = await services.db.run(lambda d: voice_mappings.get(d, ws, mapping_id))
    if record is None:
        raise voice_views.mapping_not_found(mapping_id)
    return record
