"""Migration 4: metered usage."""

SCRIPT = """
-- Usage is metered in every unit a family bills (providers.types.Usage): seconds of audio,
-- characters, pages, search units and bytes stored, beside the tokens. Existing rows read
-- as zero in the new columns.
ALTER TABLE usage_records ADD COLUMN audio_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN characters INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN searches INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN bytes_stored INTEGER NOT NULL DEFAULT 0;
"""
