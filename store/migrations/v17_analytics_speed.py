"""Migration 17: latency sketches as one BLOB per day, and hourly rollups without the key."""

from store.migrations import postgres_form

_SKETCHES = """
-- Analytics speed (issue 15). The latency sketch of successful requests per UTC day,
-- workspace and provider, one row each (store.latency_sketch: the non-empty slots of a
-- DDSketch at 1 % relative accuracy, an int32 first slot then uint32 counts). It replaces
-- usage_latency_sketch (one row per bucket): a 30-day period reads 30 x providers rows
-- and merges them in numpy instead of grouping ~25,000 bucket rows.
-- latency_sketch() is the aggregate store.latency_sketch.register defines on the
-- connection before migrations run; the usage writer encodes the same bytes.
CREATE TABLE usage_latency_days (
    workspace_id TEXT NOT NULL,
    day_epoch INTEGER NOT NULL,
    provider TEXT NOT NULL,
    sketch BLOB NOT NULL,
    PRIMARY KEY (workspace_id, day_epoch, provider)
);
DROP TABLE usage_latency_sketch;

"""
_SKETCH_BACKFILL = """
INSERT INTO usage_latency_days
SELECT workspace_id, CAST(created_epoch / 86400 AS INTEGER) * 86400, provider,
       latency_sketch(latency_ms)
FROM usage_records WHERE status < 400 GROUP BY 1, 2, 3;
"""
_HOURLY = """
-- The hourly rollups without the key: an hourly series (whole or per model or provider)
-- reads one row per hour and model instead of one per hour, model and key (43,200 -> 4,320
-- rows for 30 days of 20 keys and 6 models), in the order it groups them.
CREATE TABLE usage_rollups_hourly (
    workspace_id TEXT NOT NULL,
    start_epoch INTEGER NOT NULL,
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
    PRIMARY KEY (workspace_id, start_epoch, model, provider, endpoint)
) WITHOUT ROWID;
"""
_HOURLY_BACKFILL = """
INSERT INTO usage_rollups_hourly
SELECT workspace_id, start_epoch, model, provider, endpoint,
       sum(requests), sum(successes), sum(rate_limit_hits), sum(timeouts),
       sum(provider_errors), sum(invalid_requests), sum(prompt_tokens),
       sum(completion_tokens), sum(cost_usd), sum(cache_hits), sum(cache_tokens_saved),
       sum(cache_savings_usd), sum(latency_sum_ms)
FROM usage_rollups GROUP BY 1, 2, 3, 4, 5;
"""
# The backfills read the rows written before this version; the sketch's table goes
# once they have read it.
SCRIPT = (
    _SKETCHES.replace(
        "DROP TABLE usage_latency_sketch;", _SKETCH_BACKFILL + "DROP TABLE usage_latency_sketch;"
    )
    + _HOURLY
    + _HOURLY_BACKFILL
)

# PostgreSQL: the tables only (no usage row predates this version there: see migration 14).
POSTGRES = postgres_form.translate(_SKETCHES + _HOURLY)
