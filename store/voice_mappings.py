"""Voice mappings: a workspace's named custom voices, each a voice id per provider.

Names are unique within a workspace (a UNIQUE index, migration 5); the CRUD is
`store.named_records`'s, shared with pipeline templates (`NameTakenError` is raised
inside the writing transaction so the gateway can answer 409 rather than fail).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.named_records import NamedTable, NameTakenError

__all__ = [
    "NameTakenError",
    "VoiceMappingRecord",
    "by_name",
    "delete",
    "get",
    "insert",
    "list_for_workspace",
    "new_mapping_id",
    "replace",
]


def new_mapping_id() -> str:
    return columns.new_id("vm_")


@attrs.frozen(kw_only=True)
class VoiceMappingRecord:
    id: str = attrs.field(factory=new_mapping_id)
    workspace_id: str
    name: str
    description: str = ""
    mappings: Mapping[str, str] = attrs.field(factory=dict, converter=columns.plain_dict)
    default_settings: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    created_at: datetime
    updated_at: datetime


TABLE = NamedTable("voice_mappings", VoiceMappingRecord, ("mappings", "default_settings"))
insert = TABLE.insert
replace = TABLE.replace  # a changed mapping (same id and workspace)
get = TABLE.get  # by id; None when not in this workspace (another's is None too)
by_name = TABLE.by_name
list_for_workspace = TABLE.list_for_workspace
delete = TABLE.delete
