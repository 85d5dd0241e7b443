"""Reads behind the analytics pages: sums of the usage rollups, merged latency sketches, and
the raw log for the last minute.

Every period read goes through the rollups' primary key (workspace, time), so its cost
depends on the number of (day, key, model, provider, endpoint) combinations in the period
(hours for an hourly series), not on how many requests they summarise
(`store.usage_rollups`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs
import sqlite_utils

Dimension = Literal["model", "provider", "key_id", "endpoint"]
Bucket = Literal["hour", "day", "week", "month"]

# The first instant of each bucket as text: hours as ISO times, weeks by their Monday,
# months by their first day.
_BUCKET_SQL: Mapping[Bucket, str] = {
    "hour": "strftime('%Y-%m-%dT%H:00:00Z', start_epoch, 'unixepoch')",
    "day": "date(start_epoch, 'unixepoch')",
    "week": "date(start_epoch, 'unixepoch', '-6 days', 'weekday 1')",
    "month": "strftime('%Y-%m-01', start_epoch, 'unixepoch')",
}
_DIMENSIONS: tuple[Dimension, ...] = ("model", "provider", "key_id", "endpoint")


@attrs.frozen
class Sums:
    """Sums over a set of rollup rows. Latency sums cover successful requests only."""

    requests: int = 0
    successes: int = 0
    rate_limit_hits: int = 0
    timeouts: int = 0
    provider_errors: int = 0
    invalid_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    cache_tokens_saved: int = 0
    cache_savings_usd: float = 0.0
    latency_sum_ms: float = 0.0

    @property
    def errors(self) -> int:
        return self.requests - self.successes

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Sums) -> Sums:
        return Sums(
            *(
                getattr(self, field.name) + getattr(other, field.name)
                for field in attrs.fields(Sums)
            )
        )


_SUM_FIELDS = tuple(field.name for field in attrs.fields(Sums))
_INTEGER_FIELDS = frozenset(f.name for f in attrs.fields(Sums) if f.type in ("int", int))


@attrs.frozen
class Group:
    """The sums of one group: `labels` are the bucket (if asked) then the dimensions."""

    labels: tuple[str, ...]
    sums: Sums


def rollup_groups(
    db: sqlite_utils.Database,
    *,
    workspace_id: str,
    since_epoch: int,
    until_epoch: int,
    by: Sequence[Dimension] = (),
    bucket: Bucket | None = None,
) -> list[Group]:
    """A workspace's rollups in [since, until) summed per bucket and dimensions, in label
    order; no grouping gives one group (possibly of zeros)."""
    if any(name not in _DIMENSIONS for name in by):
        raise ValueError(f"unknown dimensions {by}")
    labels = ([_BUCKET_SQL[bucket]] if bucket else []) + list(by)
    # Periods are whole UTC days: only an hourly series needs the hourly rollups.
    table = "usage_rollups" if bucket == "hour" else "usage_rollups_daily"
    select = ", ".join([*labels, *(f"coalesce(sum({name}), 0)" for name in _SUM_FIELDS)])
    grouped = ""
    if labels:
        positions = ", ".join(str(i + 1) for i in range(len(labels)))
        grouped = f" GROUP BY {positions} ORDER BY {positions}"
    rows = db.execute(
        f"SELECT {select} FROM {table} "
        f"WHERE workspace_id = ? AND start_epoch >= ? AND start_epoch < ?{grouped}",
        [workspace_id, since_epoch, until_epoch],
    ).fetchall()
    width = len(labels)
    return [Group(tuple(str(v) for v in row[:width]), _sums(row[width:])) for row in rows]


def _sums(values: Sequence[Any]) -> Sums:
    typed: dict[str, Any] = {
        name: int(value) if name in _INTEGER_FIELDS else float(value)
        for name, value in zip(_SUM_FIELDS, values, strict=True)
    }
    return Sums(**typed)


def latency_sketches(
    db: sqlite_utils.Database, *, workspace_id: str, since_epoch: int, until_epoch: int
) -> dict[str, list[tuple[int, int]]]:
    """The period's merged latency sketch per provider: `(bucket, count)` in bucket order."""
    rows = db.execute(
        "SELECT provider, bucket, sum(count) FROM usage_latency_sketch "
        "WHERE workspace_id = ? AND day_epoch >= ? AND day_epoch < ? "
        "GROUP BY provider, bucket ORDER BY provider, bucket",
        [workspace_id, since_epoch, until_epoch],
    ).fetchall()
    sketches: dict[str, list[tuple[int, int]]] = {}
    for provider, bucket, count in rows:
        sketches.setdefault(provider, []).append((int(bucket), int(count)))
    return sketches


def merge_sketches(sketches: Mapping[str, Sequence[tuple[int, int]]]) -> list[tuple[int, int]]:
    """Several sketches as one (bucket counts added), in bucket order."""
    merged: dict[int, int] = {}
    for sketch in sketches.values():
        for bucket, count in sketch:
            merged[bucket] = merged.get(bucket, 0) + count
    return sorted(merged.items())


@attrs.frozen
class RecentFigures:
    """Raw figures of a short recent window (the realtime page's last minute)."""

    requests: int
    tokens: int
    cost_usd: float
    avg_latency_ms: float | None


def recent_figures(
    db: sqlite_utils.Database, *, workspace_id: str, since_epoch: float
) -> RecentFigures:
    """Requests at or after `since` (from the (workspace, time) index); the average latency
    is of the successful ones."""
    row = db.execute(
        "SELECT count(*), coalesce(sum(prompt_tokens + completion_tokens), 0), "
        "coalesce(sum(cost_usd), 0.0), avg(CASE WHEN status < 400 THEN latency_ms END) "
        "FROM usage_records WHERE workspace_id = ? AND created_epoch >= ?",
        [workspace_id, since_epoch],
    ).fetchone()
    return RecentFigures(
        requests=int(row[0]),
        tokens=int(row[1]),
        cost_usd=float(row[2]),
        avg_latency_ms=None if row[3] is None else float(row[3]),
    )


def key_names(db: sqlite_utils.Database, workspace_id: str) -> dict[str, str]:
    """The names of the workspace's API keys (deleted keys have none)."""
    rows = db.execute(
        "SELECT id, name FROM api_keys WHERE workspace_id = ?", [workspace_id]
    ).fetchall()
    return {str(key_id): str(name) for key_id, name in rows}
