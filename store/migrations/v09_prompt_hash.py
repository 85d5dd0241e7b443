"""Migration 9: prompt hash."""

SCRIPT = """
-- The sustainability reports find repeated identical chat requests (a caching opportunity)
-- from the chat cache key of each request, recorded whether or not the cache was on.
-- Other endpoints, and rows written before this version, read NULL.
ALTER TABLE usage_records ADD COLUMN prompt_hash TEXT;
"""
