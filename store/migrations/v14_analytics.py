"""Migration 14: analytics."""

from store.migrations import postgres_form

_TABLES = """
-- Analytics (issue 15). A cache hit records what it saved at list prices, beside the zero
-- it was billed.
ALTER TABLE usage_records ADD COLUMN cache_savings_usd REAL NOT NULL DEFAULT 0;

-- Rollups kept by the usage writer in the same transaction as the raw rows
-- (store.usage_rollups): one row per hour (start_epoch), workspace, key, model, provider
-- and endpoint,
-- so the analytics pages read a few thousand rows whatever the history's length.
-- Outcomes: success (< 400), rate_limit (429), timeout (504 or provider_timeout),
-- provider_error (other >= 500), invalid_request (other 4xx). Latency sums cover successes.
CREATE TABLE usage_rollups (
    workspace_id TEXT NOT NULL,
    start_epoch INTEGER NOT NULL,
    key_id TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    rate_limit_hits INTEGER NOT NULL DEFAULT 0,
    timeouts INTEGER NOT NULL DEFAULT 0,
    provider_errors INTEGER NOT NULL DEFAULT 0,
    invalid_requests INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    cache_tokens_saved INTEGER NOT NULL DEFAULT 0,
    cache_savings_usd REAL NOT NULL DEFAULT 0,
    latency_sum_ms REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, start_epoch, key_id, model, provider, endpoint)
) WITHOUT ROWID;
-- The same sums per UTC day: periods are whole days, so every page but an hourly series
-- reads 24 times fewer rows here.
CREATE TABLE usage_rollups_daily (
    workspace_id TEXT NOT NULL,
    start_epoch INTEGER NOT NULL,
    key_id TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    rate_limit_hits INTEGER NOT NULL DEFAULT 0,
    timeouts INTEGER NOT NULL DEFAULT 0,
    provider_errors INTEGER NOT NULL DEFAULT 0,
    invalid_requests INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    cache_tokens_saved INTEGER NOT NULL DEFAULT 0,
    cache_savings_usd REAL NOT NULL DEFAULT 0,
    latency_sum_ms REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, start_epoch, key_id, model, provider, endpoint)
) WITHOUT ROWID;

-- Latency of successful requests as a mergeable log-bucketed sketch (DDSketch, relative
-- accuracy 1%: bucket i holds (gamma^(i-1), gamma^i], gamma = 1.01/0.99), per UTC day,
-- workspace and provider. Bucket -1000000 holds latencies of 0 ms.
CREATE TABLE usage_latency_sketch (
    workspace_id TEXT NOT NULL,
    day_epoch INTEGER NOT NULL,
    provider TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, day_epoch, provider, bucket)
) WITHOUT ROWID;

-- Analytics exports (gateway.analytics.exports): built by a worker into a file under the
-- data directory, downloadable by the same workspace until `expires_at`.
CREATE TABLE analytics_exports (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('processing', 'complete', 'failed', 'expired')),
    format TEXT NOT NULL,
    include TEXT NOT NULL,
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL,
    created_at TEXT NOT NULL,
    completed_at TEXT,
    expires_at TEXT,
    expires_epoch REAL,
    file_name TEXT,
    rows INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0,
    error TEXT
);
CREATE INDEX analytics_exports_by_status ON analytics_exports (status, expires_epoch);
"""

# The rollups of the rows written before this version (as store.usage_rollups.rebuild does).
_BACKFILL = """
INSERT INTO usage_rollups
SELECT workspace_id, CAST(created_epoch / 3600 AS INTEGER) * 3600, key_id, model, provider,
       endpoint, count(*), sum(status < 400), sum(status = 429),
       sum(status <> 429 AND (status = 504 OR coalesce(error_code, '') = 'provider_timeout')),
       sum(status >= 500 AND status <> 504 AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(status >= 400 AND status < 500 AND status <> 429
           AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd), sum(cache_hit),
       sum(CASE WHEN cache_hit THEN prompt_tokens + completion_tokens ELSE 0 END),
       sum(cache_savings_usd), sum(CASE WHEN status < 400 THEN latency_ms ELSE 0 END)
FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6;

INSERT INTO usage_rollups_daily
SELECT workspace_id, CAST(created_epoch / 86400 AS INTEGER) * 86400, key_id, model, provider,
       endpoint, count(*), sum(status < 400), sum(status = 429),
       sum(status <> 429 AND (status = 504 OR coalesce(error_code, '') = 'provider_timeout')),
       sum(status >= 500 AND status <> 504 AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(status >= 400 AND status < 500 AND status <> 429
           AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd), sum(cache_hit),
       sum(CASE WHEN cache_hit THEN prompt_tokens + completion_tokens ELSE 0 END),
       sum(cache_savings_usd), sum(CASE WHEN status < 400 THEN latency_ms ELSE 0 END)
FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6;

INSERT INTO usage_latency_sketch
SELECT workspace_id, CAST(created_epoch / 86400 AS INTEGER) * 86400, provider,
       CASE WHEN latency_ms > 0
            THEN CAST(ceil(ln(latency_ms) / 0.020000666706669435) AS INTEGER)
            ELSE -1000000 END,
       count(*)
FROM usage_records WHERE status < 400 GROUP BY 1, 2, 3, 4;
"""
SCRIPT = _TABLES + _BACKFILL

# PostgreSQL: the tables only. A PostgreSQL store is created by a gateway that knows every
# migration, in one go, so no usage row predates this version and there is nothing to
# backfill (its sums are SQLite's `sum(<comparison>)` besides).
POSTGRES = postgres_form.translate(_TABLES)
