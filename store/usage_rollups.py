"""Rollups of the usage log, kept in the same transaction as the raw rows.

Analytics pages sum a period's traffic per hour, model, provider and key. Summing raw rows
would cost time in proportion to the history read (millions of rows a month), so the usage
writer adds every batch to `usage_rollups` (one row per hour, workspace, key, model,
provider and endpoint), to `usage_rollups_daily` (the same per UTC day) and to
`usage_latency_days` (successful requests' latencies per day, workspace and provider, as
one `store.latency_sketch` BLOB) as it inserts the raw rows: the rollups never disagree
with the log they summarise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from store import dialect, sketch_blob
from store.dialect import SQLITE, Dialect
from store.handle import Handle

if TYPE_CHECKING:
    from store.usage import UsageRecord

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
_HOURLY_KEY = ("workspace_id", "start_epoch", "model", "provider", "endpoint")


def _upsert(table: str, key: tuple[str, ...]) -> str:
    return (
        f"INSERT INTO {table} ({', '.join(key + _FIELDS)}) "
        f"VALUES ({', '.join('?' for _ in key + _FIELDS)}) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET "
        + ", ".join(f"{name} = {table}.{name} + excluded.{name}" for name in _FIELDS)
    )


_UPSERTS = (
    _upsert("usage_rollups", _KEY),
    _upsert("usage_rollups_daily", _KEY),
    _upsert("usage_rollups_hourly", _HOURLY_KEY),
)
_READ_SKETCH = (
    "SELECT sketch FROM usage_latency_days WHERE workspace_id = ? AND day_epoch = ? "
    "AND provider = ?"
)
_WRITE_SKETCH = (
    "INSERT INTO usage_latency_days (workspace_id, day_epoch, provider, sketch) "
    "VALUES (?, ?, ?, ?) ON CONFLICT (workspace_id, day_epoch, provider) "
    "DO UPDATE SET sketch = excluded.sketch"
)


def add_records(db: Handle, records: Iterable[UsageRecord]) -> None:
    """Add records to the rollups (the caller holds the transaction of their insert)."""
    rollups: dict[tuple[str, int, str, str, str, str], list[float]] = {}
    daily: dict[tuple[str, int, str, str, str, str], list[float]] = {}
    hourly: dict[tuple[str, int, str, str, str], list[float]] = {}
    slots: dict[tuple[str, int, str], list[int]] = {}
    for record in records:
        epoch = int(record.created_at.timestamp())
        names = (record.key_id, record.model, record.provider, record.endpoint)
        hour = (record.workspace_id, epoch - epoch % 3600, *names)
        _add(rollups.setdefault(hour, [0.0] * len(_FIELDS)), record)
        day = (record.workspace_id, epoch - epoch % 86400, *names)
        _add(daily.setdefault(day, [0.0] * len(_FIELDS)), record)
        hour_model = (record.workspace_id, hour[1], record.model, record.provider, record.endpoint)
        _add(hourly.setdefault(hour_model, [0.0] * len(_FIELDS)), record)
        if record.status < 400:
            point = (record.workspace_id, epoch - epoch % 86400, record.provider)
            slots.setdefault(point, []).append(sketch_blob.slot_of(record.latency_ms))
    groups: tuple[dict[Any, list[float]], ...] = (rollups, daily, hourly)
    for statement, sums_by_key in zip(_UPSERTS, groups, strict=True):
        db.conn.executemany(statement, [(*key, *sums) for key, sums in sums_by_key.items()])
    for point, added in slots.items():
        _add_to_sketch(db, point, added)


def _add_to_sketch(db: Handle, point: tuple[str, int, str], slots: list[int]) -> None:
    """Read, add to and write back one day's sketch (a batch touches a few of them)."""
    row = db.conn.execute(_READ_SKETCH, point).fetchone()
    blob = sketch_blob.add_slots(row[0] if row is not None else None, slots)
    db.conn.execute(_WRITE_SKETCH, (*point, blob))


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


def _rollup_from_log(table: str, bucket: int, spelling: Dialect = SQLITE) -> str:
    """The statement that fills `table` from the raw log in buckets of `bucket` seconds: the
    hourly and daily rollups are the same sums over different buckets."""
    start = spelling.floor_int(f"created_epoch / {bucket}")
    return f"""INSERT INTO {table}
SELECT workspace_id, {start} * {bucket}, key_id, model, provider,
       endpoint, count(*), count(*) FILTER (WHERE status < 400),
       count(*) FILTER (WHERE status = 429),
       count(*) FILTER (WHERE status <> 429
           AND (status = 504 OR coalesce(error_code, '') = 'provider_timeout')),
       count(*) FILTER (WHERE status >= 500 AND status <> 504
           AND coalesce(error_code, '') <> 'provider_timeout'),
       count(*) FILTER (WHERE status >= 400 AND status < 500 AND status <> 429
           AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd), sum(cache_hit),
       sum(CASE WHEN cache_hit = 1 THEN prompt_tokens + completion_tokens ELSE 0 END),
       sum(cache_savings_usd), sum(CASE WHEN status < 400 THEN latency_ms ELSE 0 END)
FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6"""


def _rebuild_statements(spelling: Dialect) -> tuple[str, ...]:
    """Every rollup but the latency sketches, recomputed from the raw log."""
    return (
        "DELETE FROM usage_rollups",
        "DELETE FROM usage_rollups_daily",
        "DELETE FROM usage_latency_days",
        "DELETE FROM usage_rollups_hourly",
        _rollup_from_log("usage_rollups", 3600, spelling),
        _rollup_from_log("usage_rollups_daily", 86400, spelling),
        f"""INSERT INTO usage_rollups_hourly
SELECT workspace_id, start_epoch, model, provider, endpoint,
       {", ".join(f"sum({name})" for name in _FIELDS)}
FROM usage_rollups GROUP BY 1, 2, 3, 4, 5""",
    )


def rebuild(db: Handle) -> None:
    """Recompute the rollups and sketches from the raw rows, in one transaction: for rows
    written around the writer (a bulk load, a restored backup). The sketches are encoded
    here (`store.sketch_blob`, as the writer does), one day, workspace and provider at a
    time, in the raw log's index order."""
    with db.atomic():
        for statement in _rebuild_statements(dialect.of(db)):
            db.execute(statement)
        day = dialect.of(db).floor_int("created_epoch / 86400")
        cursor = db.execute(
            f"SELECT workspace_id, {day} * 86400, provider, latency_ms FROM usage_records "
            "WHERE status < 400 ORDER BY 1, 2, 3"
        )
        point: tuple[str, int, str] | None = None
        slots: list[int] = []
        for workspace_id, day_epoch, provider, latency_ms in cursor.fetchall():
            if (workspace_id, day_epoch, provider) != point:
                _write_sketch(db, point, slots)
                point, slots = (workspace_id, int(day_epoch), provider), []
            slots.append(sketch_blob.slot_of(float(latency_ms)))
        _write_sketch(db, point, slots)


def _write_sketch(db: Handle, point: tuple[str, int, str] | None, slots: list[int]) -> None:
    if point is not None and slots:
        db.conn.execute(_WRITE_SKETCH, (*point, sketch_blob.add_slots(None, slots)))
