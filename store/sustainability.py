"""The sums behind the sustainability reports, read from `usage_records`.

Every query covers one workspace over a half-open time window [start, end), optionally
narrowed to one `project` and one `team` (the `X-Service-Project` / `X-Service-Team`
headers recorded with each request), and only requests that were served (status below
400: a failed request carries no footprint). The (workspace, time) index bounds every scan;
the grouping happens in SQL so that a busy quarter is never loaded row by row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from store import columns, dialect
from store.handle import Handle


@attrs.frozen
class Scope:
    """Whose requests, over which window."""

    workspace_id: str
    start: datetime
    end: datetime
    project: str | None = None
    team: str | None = None

    def where(self) -> tuple[str, list[Any]]:
        clauses = ["workspace_id = ?", "created_epoch >= ?", "created_epoch < ?", "status < 400"]
        params: list[Any] = [
            self.workspace_id,
            columns.to_epoch(self.start),
            columns.to_epoch(self.end),
        ]
        for column, value in (("project", self.project), ("team", self.team)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        return " AND ".join(clauses), params


@attrs.frozen
class Group:
    """Sums over the served requests sharing a day (None when not grouped by day), model,
    provider, endpoint and cache outcome. The metered units let a report re-price them."""

    day: str | None
    model: str
    provider: str
    endpoint: str
    cache_hit: bool
    requests: int
    prompt_tokens: int
    completion_tokens: int
    audio_seconds: float
    characters: int
    pages: int
    searches: int
    energy_kwh: float
    carbon_gco2e: float


_SUMS = (
    "count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), "
    "coalesce(sum(audio_seconds), 0.0), coalesce(sum(characters), 0), coalesce(sum(pages), 0), "
    "coalesce(sum(searches), 0), coalesce(sum(energy_kwh), 0.0), coalesce(sum(carbon_gco2e), 0.0)"
)


def groups(db: Handle, scope: Scope, *, by_day: bool = False) -> list[Group]:
    """The window's served requests summed by (day,) model, provider, endpoint and cache
    outcome; days are UTC dates (YYYY-MM-DD)."""
    where, params = scope.where()
    day = dialect.of(db).date_of("created_epoch") if by_day else "NULL"
    rows = db.execute(
        f"SELECT {day} AS day, model, provider, endpoint, cache_hit, {_SUMS} "
        f"FROM usage_records WHERE {where} "
        "GROUP BY day, model, provider, endpoint, cache_hit "
        "ORDER BY day, model, provider, endpoint, cache_hit",
        params,
    ).fetchall()
    return [
        Group(
            day=row[0],
            model=row[1],
            provider=row[2],
            endpoint=row[3],
            cache_hit=bool(row[4]),
            requests=int(row[5]),
            prompt_tokens=int(row[6]),
            completion_tokens=int(row[7]),
            audio_seconds=float(row[8]),
            characters=int(row[9]),
            pages=int(row[10]),
            searches=int(row[11]),
            energy_kwh=float(row[12]),
            carbon_gco2e=float(row[13]),
        )
        for row in rows
    ]


@attrs.frozen
class Repeats:
    """Live (not cached) chat requests of one model that repeated an earlier identical
    request of the window: how many, and the carbon they emitted."""

    model: str
    provider: str
    repeats: int
    carbon_gco2e: float


def repeated_prompts(db: Handle, scope: Scope) -> list[Repeats]:
    """Per model, the live chat requests beyond the first of each group of identical ones
    (same `prompt_hash`); their carbon is the group's average times the repeats."""
    where, params = scope.where()
    rows = db.execute(
        "SELECT model, provider, sum(n - 1), sum(carbon * (n - 1) / n) FROM ("
        "  SELECT model, provider, prompt_hash, count(*) AS n, sum(carbon_gco2e) AS carbon "
        f"  FROM usage_records WHERE {where} AND endpoint = 'chat' AND cache_hit = 0 "
        "  AND prompt_hash IS NOT NULL GROUP BY model, provider, prompt_hash HAVING count(*) > 1"
        ") AS groups GROUP BY model, provider ORDER BY model, provider",
        params,
    ).fetchall()
    return [Repeats(row[0], row[1], int(row[2]), float(row[3])) for row in rows]


@attrs.frozen
class LongOutputs:
    """Live chat requests of one model whose answer ran past a length: how many, and how
    many completion tokens beyond that length they generated in all."""

    model: str
    provider: str
    requests: int
    excess_tokens: int


def long_outputs(db: Handle, scope: Scope, threshold: int) -> list[LongOutputs]:
    """Per model, the live chat requests with more than `threshold` completion tokens."""
    where, params = scope.where()
    rows = db.execute(
        "SELECT model, provider, count(*), sum(completion_tokens - ?) FROM usage_records "
        f"WHERE {where} AND endpoint = 'chat' AND cache_hit = 0 AND completion_tokens > ? "
        "GROUP BY model, provider ORDER BY model, provider",
        [threshold, *params, threshold],
    ).fetchall()
    return [LongOutputs(row[0], row[1], int(row[2]), int(row[3])) for row in rows]
