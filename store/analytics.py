"""Reads behind the analytics pages: sums of the usage rollups, merged latency sketches, and
the raw log for the last minute.

Every period read goes through the rollups' primary key (workspace, time), so its cost
depends on the number of (day, key, model, provider, endpoint) combinations in the period
(hours for an hourly series), not on how many requests they summarise
(`store.usage_rollups`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import attrs

from store import dialect, latency_sketch
from store.handle import Handle
from store.latency_sketch import Counts

Dimension = Literal["model", "provider", "key_id", "endpoint"]
Bucket = Literal["hour", "day", "week", "month"]


# The first instant of each bucket: hours and days are the rollups' own `start_epoch`
# (grouped as stored, in the primary key's order, and formatted once per bucket in
# Python: `_LABEL_FORMAT`); weeks by their Monday, months by their first day, as text.
def _bucket_sql(db: Handle, bucket: Bucket) -> str:
    if bucket == "week":
        return dialect.of(db).week_of("start_epoch")
    if bucket == "month":
        return dialect.of(db).month_of("start_epoch")
    return "start_epoch"


_LABEL_FORMAT: Mapping[Bucket, str] = {"hour": "%Y-%m-%dT%H:00:00Z", "day": "%Y-%m-%d"}
_DIMENSIONS: tuple[Dimension, ...] = ("model", "provider", "key_id", "endpoint")
# A request the gateway answered itself, before any provider (a bad body, an unknown
# model, a limit), is stored without a provider; the pages name it as the gateway's own,
# as file storage's records already are, rather than under an empty key.
NO_PROVIDER_LABEL = "gateway"
_LABEL_SQL: Mapping[str, str] = {
    "provider": f"CASE provider WHEN '' THEN '{NO_PROVIDER_LABEL}' ELSE provider END"
}


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
        return Sums(*map(operator.add, _values(self), _values(other)))


_SUM_FIELDS = tuple(field.name for field in attrs.fields(Sums))
_values = operator.attrgetter(*_SUM_FIELDS)
_SUM_SQL = tuple(
    f"coalesce(sum({f.name}), {'0' if f.type in ('int', int) else '0.0'})"
    for f in attrs.fields(Sums)
)


@attrs.frozen
class Group:
    """The sums of one group: `labels` are the bucket (if asked) then the dimensions."""

    labels: tuple[str, ...]
    sums: Sums


def rollup_groups(
    db: Handle,
    *,
    workspace_id: str,
    since_epoch: int,
    until_epoch: int,
    by: Sequence[Dimension] = (),
    bucket: Bucket | None = None,
) -> list[Group]:
    """A workspace's rollups in [since, until) summed per bucket and dimensions, in label
    order; no grouping gives one group (possibly of zeros)."""
    rows = _grouped(db, _SUM_SQL, workspace_id, since_epoch, until_epoch, by, bucket)
    width = len(by) + (1 if bucket else 0)
    return [Group(row[:width], Sums(*row[width:])) for row in rows]


SERIES_SQL = (
    "coalesce(sum(requests), 0)",
    "coalesce(sum(prompt_tokens), 0)",
    "coalesce(sum(completion_tokens), 0)",
    "coalesce(sum(cost_usd), 0.0)",
)


def series_rows(
    db: Handle,
    *,
    workspace_id: str,
    since_epoch: int,
    until_epoch: int,
    bucket: Bucket,
    by: Sequence[Dimension] = (),
) -> list[tuple[Any, ...]]:
    """The usage series as plain rows: (bucket, *dimensions, requests, prompt tokens,
    completion tokens, cost), in label order. Only the four sums the series shows, and
    no object per point: an hourly series of 30 days is thousands of points."""
    return _grouped(db, SERIES_SQL, workspace_id, since_epoch, until_epoch, by, bucket)


def _grouped(
    db: Handle,
    sums: Sequence[str],
    workspace_id: str,
    since_epoch: int,
    until_epoch: int,
    by: Sequence[Dimension],
    bucket: Bucket | None,
) -> list[tuple[Any, ...]]:
    """One grouped query over the smallest rollup that answers; labels as text."""
    if any(name not in _DIMENSIONS for name in by):
        raise ValueError(f"unknown dimensions {by}")
    labels = ([_bucket_sql(db, bucket)] if bucket else []) + [_LABEL_SQL.get(n, n) for n in by]
    grouped = ""
    if labels:
        positions = ", ".join(str(i + 1) for i in range(len(labels)))
        grouped = f" GROUP BY {positions} ORDER BY {positions}"
    rows = db.execute(
        f"SELECT {', '.join([*labels, *sums])} FROM {_table(by, bucket)} "
        f"WHERE workspace_id = ? AND start_epoch >= ? AND start_epoch < ?{grouped}",
        [workspace_id, since_epoch, until_epoch],
    ).fetchall()
    if bucket is None or bucket not in _LABEL_FORMAT:
        return [tuple(row) for row in rows]
    label_of = _labeller(bucket)
    return [(label_of(row[0]), *row[1:]) for row in rows]


def _table(by: Sequence[Dimension], bucket: Bucket | None) -> str:
    """The smallest rollup that answers: periods are whole UTC days, so only an hourly
    series needs hourly rows, and only one per key needs the key's."""
    if bucket != "hour":
        return "usage_rollups_daily"
    return "usage_rollups" if "key_id" in by else "usage_rollups_hourly"


def _labeller(bucket: Bucket) -> Callable[[int], str]:
    """Text of a group's first label: hours and days formatted once per distinct bucket."""
    pattern = _LABEL_FORMAT[bucket]
    cache: dict[int, str] = {}

    def label(epoch: int) -> str:
        text = cache.get(epoch)
        if text is None:
            text = cache[epoch] = datetime.fromtimestamp(epoch, UTC).strftime(pattern)
        return text

    return label


def latency_sketches(
    db: Handle, *, workspace_id: str, since_epoch: int, until_epoch: int
) -> dict[str, Counts]:
    """The period's merged latency sketch per provider (one stored sketch per day read)."""
    rows = db.execute(
        "SELECT provider, sketch FROM usage_latency_days "
        "WHERE workspace_id = ? AND day_epoch >= ? AND day_epoch < ?",
        [workspace_id, since_epoch, until_epoch],
    ).fetchall()
    sketches: dict[str, Counts] = {}
    for provider, blob in rows:
        counts = sketches.get(provider)
        if counts is None:
            counts = sketches[provider] = latency_sketch.empty()
        latency_sketch.add_blob(counts, blob)
    return sketches


def merge_sketches(sketches: Mapping[str, Counts]) -> Counts:
    """Several sketches as one (bucket counts added)."""
    merged = latency_sketch.empty()
    for counts in sketches.values():
        latency_sketch.add(merged, counts)
    return merged


@attrs.frozen
class RecentFigures:
    """Raw figures of a short recent window (the realtime page's last minute)."""

    requests: int
    tokens: int
    cost_usd: float
    avg_latency_ms: float | None


def recent_figures(db: Handle, *, workspace_id: str, since_epoch: float) -> RecentFigures:
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


def key_names(db: Handle, workspace_id: str) -> dict[str, str]:
    """The names of the workspace's API keys (deleted keys have none)."""
    rows = db.execute(
        "SELECT id, name FROM api_keys WHERE workspace_id = ?", [workspace_id]
    ).fetchall()
    return {str(key_id): str(name) for key_id, name in rows}
