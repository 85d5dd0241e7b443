"""Migration 26: the usage writer's batch ids, so a batch sent again is not written twice."""

SCRIPT = """
-- One row per batch of usage records the usage writer's child committed, in the batch's
-- own transaction. A batch whose child was killed before it answered is sent again to
-- the next child with the same id; if the first child had committed it, the id is here
-- and the batch is skipped (exactly once). Rows older than a day are deleted by the
-- writer: a batch is only ever sent again within seconds.
CREATE TABLE usage_batches (
    id TEXT PRIMARY KEY,
    written_epoch INTEGER NOT NULL
);
CREATE INDEX usage_batches_by_time ON usage_batches (written_epoch);
"""
