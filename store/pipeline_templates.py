"""Custom pipeline templates: a workspace's named stage settings (recognition, language
model, speech) for `POST /v1/audio/pipelines`.

The stage settings are one JSON column (`stages`: `stt`, `llm`, `tts`), validated by the
gateway before they are written. Names are unique within a workspace (a UNIQUE index,
migration 13); the CRUD is `store.named_records`'s, shared with voice mappings.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle
from store.named_records import NamedTable, NameTakenError

__all__ = [
    "NameTakenError",
    "PipelineTemplateRecord",
    "delete",
    "get",
    "insert",
    "list_for_workspace",
    "new_template_id",
    "replace",
]


def new_template_id() -> str:
    return columns.new_id("pt_")


@attrs.frozen(kw_only=True)
class PipelineTemplateRecord:
    id: str = attrs.field(factory=new_template_id)
    workspace_id: str
    name: str
    description: str = ""
    stages: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    created_at: datetime
    updated_at: datetime


TABLE = NamedTable("pipeline_templates", PipelineTemplateRecord, ("stages",))
insert = TABLE.insert
replace = TABLE.replace  # a changed template (same id and workspace)
list_for_workspace = TABLE.list_for_workspace
delete = TABLE.delete


def get(db: Handle, workspace_id: str, template_id: str) -> PipelineTemplateRecord | None:
    """The template by id or name, or None when this workspace has none (another
    workspace's is None too)."""
    return TABLE.by_id_or_name(db, workspace_id, template_id)
