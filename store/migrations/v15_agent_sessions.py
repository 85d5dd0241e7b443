"""Migration 15: agents' sessions on usage records and on files."""

SCRIPT = """
-- Agent limits (issue 18). An agent's request names its session (X-Agent-Session); its
-- usage record keeps it, so a session's cost is read back after a restart
-- (store.agents.session_spent). NULL for every other key, which the partial index skips.
ALTER TABLE usage_records ADD COLUMN agent_session TEXT;
CREATE INDEX usage_by_agent_session ON usage_records (key_id, agent_session)
    WHERE agent_session IS NOT NULL;

-- A file an agent uploaded: its processing (OCR, transcription, embeddings) is limited and
-- charged in the uploading agent's name and session. NULL for other keys.
ALTER TABLE files ADD COLUMN agent_id TEXT;
ALTER TABLE files ADD COLUMN agent_session TEXT;
"""
