"""Usage over time: the usage log summed per time bucket, provider and model.

Read by the web console's charts (`GET /v1/management/console/usage`). One grouped query
over the (workspace, time) index; buckets are fixed-width slices of epoch seconds, so an
hour bucket starts on the hour in UTC. Requests that reached no provider (refused by a
limit, a bad body, an unknown model) have no provider to sum under: they are summed per
error code instead (`reason`), so a chart can say why rather than show a blank.
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
    reason: str | None
    """The error code of requests that reached no provider (`provider` is empty)."""
    requests: int
    errors: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    energy_kwh: float
    carbon_gco2e: float
    cache_hits: int


def usage_series(
    db: Handle,
    *,
    workspace_id: str,
    since: datetime,
    until: datetime,
    bucket_s: int,
) -> list[SeriesPoint]:
    """Sums per (bucket, provider, model, reason) of the workspace's records from `since`
    to before `until`, oldest bucket first."""
    rows = db.execute(
        f"SELECT {dialect.of(db).floor_int('created_epoch / ?')} * ? AS bucket, provider, "
        "model, CASE WHEN provider = '' THEN coalesce(error_code, 'unknown') END AS reason, "
        "count(*), count(*) FILTER (WHERE status >= 400), coalesce(sum(prompt_tokens), 0), "
        "coalesce(sum(completion_tokens), 0), coalesce(sum(cost_usd), 0.0), "
        "coalesce(sum(energy_kwh), 0.0), coalesce(sum(carbon_gco2e), 0.0), "
        "coalesce(sum(cache_hit), 0) "
        "FROM usage_records WHERE workspace_id = ? AND created_epoch >= ? "
        "AND created_epoch < ? "
        "GROUP BY bucket, provider, model, reason ORDER BY bucket, provider, model, reason",
        [
            bucket_s,
            bucket_s,
            workspace_id,
            columns.to_epoch(since),
            columns.to_epoch(until),
        ],
    ).fetchall()
    return [
        SeriesPoint(
            start=datetime.fromtimestamp(row[0], UTC),
            provider=row[1],
            model=row[2],
            reason=row[3],
            requests=int(row[4]),
            errors=int(row[5]),
            prompt_tokens=int(row[6]),
            completion_tokens=int(row[7]),
            cost_usd=float(row[8]),
            energy_kwh=float(row[9]),
            carbon_gco2e=float(row[10]),
            cache_hits=int(row[11]),
        )
        for row in rows
    ]
