"""Migration 20: stored responses of the Responses API (`POST /v1/responses`, `store`)."""

SCRIPT = """
-- One row a stored response: the response object as it was answered, and the input items
-- of its request. A conversation continued with previous_response_id is rebuilt by walking
-- the chain (each row names its previous one), so no row repeats another's content.
-- expires_at (Unix seconds) is when retention erases it; NULL keeps it until deleted.
CREATE TABLE stored_responses (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    previous_response_id TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    input_items TEXT NOT NULL,
    response TEXT NOT NULL
);
CREATE INDEX stored_responses_by_expiry ON stored_responses (expires_at)
    WHERE expires_at IS NOT NULL;
"""
