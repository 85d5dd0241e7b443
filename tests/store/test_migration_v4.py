"""Migration 4: usage records carry every metered unit; older rows read as zero units."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import sqlite_utils

from store import usage
from store.migrations import MIGRATIONS, apply_migrations, current_version
from tests.store.test_migration_v3 import insert_version_1_rows
from tests.store.test_usage import make_usage


def test_rows_written_before_version_4_stay_readable_with_zero_units() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    try:
        assert apply_migrations(db, MIGRATIONS[:3]) == [1, 2, 3]
        insert_version_1_rows(db, [make_usage(1)])

        assert apply_migrations(db, MIGRATIONS[:4]) == [4]
        assert current_version(db) == 4
        (old,) = usage.list_for_request(db, "req_1")
        assert old.prompt_tokens == make_usage(1).prompt_tokens
        assert (old.audio_seconds, old.characters, old.pages, old.searches, old.bytes_stored) == (
            0.0,
            0,
            0,
            0,
            0,
        )
    finally:
        db.close()


def test_metered_units_round_trip() -> None:
    db = sqlite_utils.Database(sqlite3.connect(":memory:"))
    try:
        apply_migrations(db)
        record = make_usage(7)
        metered = usage.UsageRecord(
            **{
                **{f: getattr(record, f) for f in ("key_id", "workspace_id", "provider")},
                "request_id": "req_speech",
                "model": "tts-1",
                "endpoint": "audio.speech",
                "status": 200,
                "created_at": datetime(2025, 3, 1, tzinfo=UTC),
                "audio_seconds": 12.5,
                "characters": 420,
                "pages": 3,
                "searches": 2,
                "bytes_stored": 4096,
            }
        )
        usage.insert_records(db, [metered])
        assert usage.list_for_request(db, "req_speech") == [metered]
    finally:
        db.close()
