"""Migration 3: usage by key endpoint."""

SCRIPT = """
-- The daily and monthly limits count a key's requests to the endpoints the limiter
-- admits; a month of a busy key's rows is counted from this index alone.
CREATE INDEX usage_by_key_endpoint_time ON usage_records (key_id, endpoint, created_epoch);
"""
