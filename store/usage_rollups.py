"""Rollups of the usage log, kept in the same transaction as the raw rows.

Analytics pages sum a period's traffic per hour, model, provider and key. Summing raw rows
would cost time in proportion to the history read (millions of rows a month), so the usage
writer adds every batch to `usage_rollups` (one row per hour, workspace, key, model,
provider and endpoint), to `usage_rollups_daily` (the same per UTC day) and to
`usage_latency_sketch` (successful requests' latencies per day, workspace and provider) as
it inserts the raw rows: the rollups never disagree with the log they summarise.

Percentiles come from the sketch, a DDSketch with relative accuracy `RELATIVE_ACCURACY`:
bucket `i` holds latencies in (gamma^(i-1), gamma^i] with gamma = (1+a)/(1-a), and a
quantile read from it is within a factor (1 +- a) of the exact nearest-rank value. Sketches
of several days and providers merge by adding bucket counts, so a period's percentiles cost
a few hundred rows, not a sort of every request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import sqlite_utils

if TYPE_CHECKING:
    from store.usage import UsageRecord

RELATIVE_ACCURACY = 0.01
GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
LOG_GAMMA = math.log(GAMMA)
ZERO_BUCKET = -1_000_000
"""The bucket of latencies that are 0 ms (or less): read back as 0."""

ErrorType = Literal["rate_limit", "timeout", "provider_error", "invalid_request"]
ERROR_TYPES: tuple[ErrorType, ...] = ("rate_limit", "timeout", "provider_error", "invalid_request")


def error_type(status: int, error_code: str | None) -> ErrorType | None:
    """The analytics class of a request's outcome; None for a success (status < 400).

    429 is a limit (the gateway's or a provider's), a 504 or `provider_timeout` a timeout,
    any other 5xx the provider's fault, any other 4xx the caller's. Migration 14 repeats this
    table in SQL for the rows written before it.
    """
    if status < 400:
        return None
    if status == 429:
        return "rate_limit"
    if status == 504 or error_code == "provider_timeout":
        return "timeout"
    if status >= 500:
        return "provider_error"
    return "invalid_request"


def sketch_bucket(latency_ms: float) -> int:
    """The sketch bucket of one latency."""
    if latency_ms <= 0:
        return ZERO_BUCKET
    return math.ceil(math.log(latency_ms) / LOG_GAMMA)


def bucket_value(bucket: int) -> float:
    """The value a bucket stands for: within `RELATIVE_ACCURACY` of all it holds."""
    if bucket == ZERO_BUCKET:
        return 0.0
    return 2 * GAMMA**bucket / (GAMMA + 1)


def quantile(buckets: Sequence[tuple[int, int]], fraction: float) -> float | None:
    """The nearest-rank quantile of a merged sketch (`(bucket, count)` in bucket order);
    None for an empty one."""
    total = sum(count for _, count in buckets)
    if total == 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for bucket, count in buckets:
        seen += count
        if seen >= rank:
            return bucket_value(bucket)
    return bucket_value(buckets[-1][0])


_FIELDS = (
    "requests",
    "successes",
    "rate_limit_hits",
    "timeouts",
    "provider_errors",
    "invalid_requests",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cache_hits",
    "cache_tokens_saved",
    "cache_savings_usd",
    "latency_sum_ms",
)
_KEY = ("workspace_id", "start_epoch", "key_id", "model", "provider", "endpoint")
_OUTCOME_FIELD = {
    None: "successes",
    "rate_limit": "rate_limit_hits",
    "timeout": "timeouts",
    "provider_error": "provider_errors",
    "invalid_request": "invalid_requests",
}
_UPSERT_ROLLUP = (
    f"INSERT INTO {{table}} ({', '.join(_KEY + _FIELDS)}) "
    f"VALUES ({', '.join('?' for _ in _KEY + _FIELDS)}) "
    f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET "
    + ", ".join(f"{name} = {name} + excluded.{name}" for name in _FIELDS)
)
_UPSERT_SKETCH = (
    "INSERT INTO usage_latency_sketch (workspace_id, day_epoch, provider, bucket, count) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace_id, day_epoch, provider, bucket) "
    "DO UPDATE SET count = count + excluded.count"
)


def add_records(db: sqlite_utils.Database, records: Iterable[UsageRecord]) -> None:
    """Add records to the rollups (the caller holds the transaction of their insert)."""
    rollups: dict[tuple[str, int, str, str, str, str], list[float]] = {}
    daily: dict[tuple[str, int, str, str, str, str], list[float]] = {}
    sketch: dict[tuple[str, int, str, int], int] = {}
    for record in records:
        epoch = int(record.created_at.timestamp())
        names = (record.key_id, record.model, record.provider, record.endpoint)
        hour = (record.workspace_id, epoch - epoch % 3600, *names)
        _add(rollups.setdefault(hour, [0.0] * len(_FIELDS)), record)
        day = (record.workspace_id, epoch - epoch % 86400, *names)
        _add(daily.setdefault(day, [0.0] * len(_FIELDS)), record)
        if record.status < 400:
            point = (
                record.workspace_id,
                epoch - epoch % 86400,
                record.provider,
                sketch_bucket(record.latency_ms),
            )
            sketch[point] = sketch.get(point, 0) + 1
    for table, sums_by_key in (("usage_rollups", rollups), ("usage_rollups_daily", daily)):
        db.conn.executemany(
            _UPSERT_ROLLUP.format(table=table), [(*key, *sums) for key, sums in sums_by_key.items()]
        )
    db.conn.executemany(_UPSERT_SKETCH, [(*point, count) for point, count in sketch.items()])


_INDEX = {name: i for i, name in enumerate(_FIELDS)}
_OUTCOME_INDEX = {outcome: _INDEX[name] for outcome, name in _OUTCOME_FIELD.items()}


def _add(sums: list[float], record: UsageRecord) -> None:
    """Add one record to its rollup's sums (indexes, not names: this runs per record)."""
    outcome = error_type(record.status, record.error_code)
    sums[0] += 1
    sums[_OUTCOME_INDEX[outcome]] += 1
    sums[6] += record.prompt_tokens
    sums[7] += record.completion_tokens
    sums[8] += record.cost_usd
    if record.cache_hit:
        sums[9] += 1
        sums[10] += record.prompt_tokens + record.completion_tokens
    sums[11] += record.cache_savings_usd
    if outcome is None:
        sums[12] += record.latency_ms


REBUILD = (
    "DELETE FROM usage_rollups",
    "DELETE FROM usage_rollups_daily",
    "DELETE FROM usage_latency_sketch",
    """INSERT INTO usage_rollups
SELECT workspace_id, CAST(created_epoch / 3600 AS INTEGER) * 3600, key_id, model, provider,
       endpoint, count(*), sum(status < 400), sum(status = 429),
       sum(status <> 429 AND (status = 504 OR coalesce(error_code, '') = 'provider_timeout')),
       sum(status >= 500 AND status <> 504 AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(status >= 400 AND status < 500 AND status <> 429
           AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd), sum(cache_hit),
       sum(CASE WHEN cache_hit THEN prompt_tokens + completion_tokens ELSE 0 END),
       sum(cache_savings_usd), sum(CASE WHEN status < 400 THEN latency_ms ELSE 0 END)
FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6""",
    """INSERT INTO usage_rollups_daily
SELECT workspace_id, CAST(created_epoch / 86400 AS INTEGER) * 86400, key_id, model, provider,
       endpoint, count(*), sum(status < 400), sum(status = 429),
       sum(status <> 429 AND (status = 504 OR coalesce(error_code, '') = 'provider_timeout')),
       sum(status >= 500 AND status <> 504 AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(status >= 400 AND status < 500 AND status <> 429
           AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd), sum(cache_hit),
       sum(CASE WHEN cache_hit THEN prompt_tokens + completion_tokens ELSE 0 END),
       sum(cache_savings_usd), sum(CASE WHEN status < 400 THEN latency_ms ELSE 0 END)
FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6""",
    f"""INSERT INTO usage_latency_sketch
SELECT workspace_id, CAST(created_epoch / 86400 AS INTEGER) * 86400, provider,
       CASE WHEN latency_ms > 0 THEN CAST(ceil(ln(latency_ms) / {LOG_GAMMA!r}) AS INTEGER)
            ELSE {ZERO_BUCKET} END,
       count(*)
FROM usage_records WHERE status < 400 GROUP BY 1, 2, 3, 4""",
)
"""Migration 14's backfill, as statements: rebuild every rollup from the raw log."""


def rebuild(db: sqlite_utils.Database) -> None:
    """Recompute the rollups and sketches from the raw rows, in one transaction: for rows
    written around the writer (a bulk load, a restored backup)."""
    with db.atomic():
        for statement in REBUILD:
            db.execute(statement)
