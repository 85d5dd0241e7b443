"""`store.named_records` through its two kinds: pipeline templates and voice mappings
(one workspace's named records: unique names, id or name look-up, isolation)."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest
import sqlite_utils

from store import pipeline_templates, voice_mappings, workspaces
from store.errors import integrity_errors
from store.named_records import NameTakenError
from store.pipeline_templates import PipelineTemplateRecord
from store.voice_mappings import VoiceMappingRecord
from store.workspaces import WorkspaceRecord

from .conftest import T0


def template(name: str, workspace: str = "default", minute: int = 0) -> PipelineTemplateRecord:
    at = T0 + timedelta(minutes=minute)
    stages = {"stt": {"model": "whisper-1"}, "llm": {"model": "gpt-4o"}, "tts": None}
    return PipelineTemplateRecord(
        workspace_id=workspace, name=name, stages=stages, created_at=at, updated_at=at
    )


def test_round_trip_and_look_up_by_id_or_name(sdb: sqlite_utils.Database) -> None:
    first, second = template("first"), template("second", minute=1)
    for record in (second, first):
        pipeline_templates.insert(sdb, record)
    assert pipeline_templates.get(sdb, "default", first.id) == first
    assert pipeline_templates.get(sdb, "default", "second") == second
    assert pipeline_templates.list_for_workspace(sdb, "default") == [first, second]


def test_an_id_wins_over_a_name_that_spells_it(sdb: sqlite_utils.Database) -> None:
    first = template("first")
    pipeline_templates.insert(sdb, first)
    impostor = template(first.id, minute=1)  # named after the other's id
    pipeline_templates.insert(sdb, impostor)
    assert pipeline_templates.get(sdb, "default", first.id) == first


def test_names_are_unique_within_a_workspace_only(sdb: sqlite_utils.Database) -> None:
    workspaces.insert(sdb, WorkspaceRecord(id="other", name="Other", created_at=T0))
    pipeline_templates.insert(sdb, template("same"))
    with pytest.raises(NameTakenError):
        pipeline_templates.insert(sdb, template("same"))
    pipeline_templates.insert(sdb, template("same", workspace="other"))
    other = template("other")
    pipeline_templates.insert(sdb, other)
    with pytest.raises(NameTakenError):
        pipeline_templates.replace(sdb, attrs.evolve(other, name="same"))
    assert pipeline_templates.get(sdb, "default", other.id) == other  # unchanged


def test_a_missing_workspace_is_no_name_clash(sdb: sqlite_utils.Database) -> None:
    with pytest.raises(integrity_errors(), match=r"FOREIGN KEY|foreign key"):
        pipeline_templates.insert(sdb, template("orphan", workspace="nowhere"))


def test_another_workspace_sees_nothing_and_deletes_nothing(sdb: sqlite_utils.Database) -> None:
    mine = template("mine")
    pipeline_templates.insert(sdb, mine)
    assert pipeline_templates.get(sdb, "other", mine.id) is None
    assert pipeline_templates.get(sdb, "other", "mine") is None
    assert not pipeline_templates.delete(sdb, "other", mine.id)
    assert pipeline_templates.delete(sdb, "default", mine.id)
    assert pipeline_templates.get(sdb, "default", mine.id) is None


def test_replace_changes_all_but_the_id_workspace_and_creation(
    sdb: sqlite_utils.Database,
) -> None:
    mapping = VoiceMappingRecord(
        workspace_id="default",
        name="narrator",
        mappings={"openai": "onyx"},
        created_at=T0,
        updated_at=T0,
    )
    voice_mappings.insert(sdb, mapping)
    later = T0 + timedelta(hours=1)
    changed = attrs.evolve(
        mapping,
        name="storyteller",
        description="warm",
        mappings={"openai": "fable"},
        default_settings={"speed": 1.1},
        updated_at=later,
    )
    voice_mappings.replace(sdb, attrs.evolve(changed, created_at=later))
    assert voice_mappings.get(sdb, "default", mapping.id) == changed
    assert voice_mappings.by_name(sdb, "default", "storyteller") == changed
    assert voice_mappings.by_name(sdb, "default", "narrator") is None
