"""Usage over time: the usage log summed per time bucket, provider and model.

Read by the web console's charts (`GET /v1/management/console/usage`). One grouped query
over the (workspace, time) index; buckets are fixed-width slices of epoch seconds, so an
hour bucket starts on the hour in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from store import columns, dialect
from store.handle import Handle


@attrs.frozen
class SeriesPoint:
    start: datetime
    provider: str
    model: str
    requests: int
    errors: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    energy_kwh: float
    carbon_gco2e: float
    cache_hits: int


def usage_series(
    db: Handle, *, workspace_id: str, since: datetime, bucket_s: int
) -> list[SeriesPoint]:
    """Sums per (bucket, provider, model) of the workspace's records at or after `since`,
    oldest bucket first."""
    rows = db.execute(
        f"SELECT {dialect.of(db).floor_int('created_epoch / ?')} * ? AS bucket, provider, "
        "model, count(*), "
        "count(*) FILTER (WHERE status >= 400), coalesce(sum(prompt_tokens), 0), "
        "coalesce(sum(completion_tokens), 0), coalesce(sum(cost_usd), 0.0), "
        "coalesce(sum(energy_kwh), 0.0), coalesce(sum(carbon_gco2e), 0.0), "
        "coalesce(sum(cache_hit), 0) "
        "FROM usage_records WHERE workspace_id = ? AND created_epoch >= ? "
        "GROUP BY bucket, provider, model ORDER BY bucket, provider, model",
        [bucket_s, bucket_s, workspace_id, columns.to_epoch(since)],
    ).fetchall()
    return [
        SeriesPoint(
            start=datetime.fromtimestamp(row[0], UTC),
            provider=row[1],
            model=row[2],
            requests=int(row[3]),
            errors=int(row[4]),
            prompt_tokens=int(row[5]),
            completion_tokens=int(row[6]),
            cost_usd=float(row[7]),
            energy_kwh=float(row[8]),
            carbon_gco2e=float(row[9]),
            cache_hits=int(row[10]),
        )
        for row in rows
    ]
