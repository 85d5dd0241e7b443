"""Usage records: one row per served (or failed) request, and the sums read back from them.

Rows are written in batches by `gateway.workers.usage_writer.UsageWriter`, off the request path.
`created_at` is stored twice: as ISO text (for people and exports) and as epoch seconds
(`created_epoch`), which the indexes on (key, time), (key, endpoint, time) and
(workspace, time) use for the range queries behind "usage today" figures and the daily
and monthly limits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import attrs

from store import columns, dialect, request_log, usage_batches, usage_rollups
from store.handle import Handle
from store.request_log import LoggedAttempt
from store.response_rows import StoredRow, put_rows


class UsageRecord(NamedTuple):
    """What one request cost and produced. `status` is the HTTP status sent to the client.

    A named tuple, not a frozen attrs class: the request's path builds one per request,
    and a frozen attrs instance of these 35 fields took ~54 K instructions to build by
    keyword (an `object.__setattr__` per field, two converters), a tuple ~2 K
    (`gateway.upstream.usage` builds it in field order); the usage writer's pipe sends it
    as the array it already is. Build it with sequences as tuples (`tags`, `attempts`);
    the wire's and the store's readers convert what they decode."""

    request_id: str
    key_id: str
    workspace_id: str
    model: str
    provider: str
    endpoint: str
    status: int
    created_at: datetime
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Metered units besides tokens (see `providers.types.Usage`): zero where unused.
    audio_seconds: float = 0.0
    characters: int = 0
    pages: int = 0
    searches: int = 0
    bytes_stored: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    energy_kwh: float = 0.0
    carbon_gco2e: float = 0.0
    error_code: str | None = None
    cache_hit: bool = False
    # What a cache hit saved at list prices (its `cost_usd` is the zero it was billed).
    cache_savings_usd: float = 0.0
    project: str | None = None
    team: str | None = None
    tags: tuple[str, ...] = ()
    # The chat cache key of the request (`gateway.chat.cache.key`), None elsewhere: equal
    # hashes are the same question asked again (the sustainability reports' caching lead).
    prompt_hash: str | None = None
    # The session an agent's request named (`X-Agent-Session`); None for other keys.
    agent_session: str | None = None
    # For the request log (`store.request_log`), written only when `request_log` is set:
    # the model the client named, the time to the first token (the first chunk of a
    # stream, the whole answer otherwise), the race's attempts, the W3C trace id, and the
    # sealed bodies of a workspace that keeps them.
    request_log: bool = False
    model_requested: str | None = None
    ttft_ms: float | None = None
    attempts: tuple[LoggedAttempt, ...] = ()
    trace_id: str | None = None
    # The bodies as JSON text: clear until the usage writer seals them (PII redacted,
    # encrypted: `body_sealed`); the request log never writes an unsealed body.
    body: str | None = None
    body_sealed: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __repr__(self) -> str:  # the body stays out of logs and test output
        shown = (f"{name}={getattr(self, name)!r}" for name in _SHOWN)
        return f"UsageRecord({', '.join(shown)})"


_SHOWN = tuple(name for name in UsageRecord._fields if name != "body")


@attrs.frozen
class UsageTotals:
    """Sums over a set of usage records."""

    requests: int
    tokens: int
    cost_usd: float


_COLUMNS = (
    "request_id, key_id, workspace_id, model, provider, endpoint, prompt_tokens, "
    "completion_tokens, audio_seconds, characters, pages, searches, bytes_stored, cost_usd, "
    "latency_ms, energy_kwh, carbon_gco2e, status, error_code, cache_hit, cache_savings_usd, "
    "project, team, tags, created_at, created_epoch, prompt_hash, agent_session"
)
_NAMES = tuple(name.strip() for name in _COLUMNS.split(","))
_INSERT = (
    f"INSERT INTO usage_records ({_COLUMNS}) VALUES ("
    + ", ".join(f":{name.strip()}" for name in _COLUMNS.split(","))
    + ")"
)


_FIELDS = UsageRecord._fields
# The fields of a usage row (the request log's own live in `store.request_log`).
_STORED = tuple(name.strip() for name in _COLUMNS.split(",") if name.strip() in _FIELDS)


def _to_row(record: UsageRecord) -> dict[str, Any]:
    # Not `attrs.asdict`: that recurses into every value and is the writer's largest cost.
    row = {name: getattr(record, name) for name in _STORED}
    row["cache_hit"] = int(record.cache_hit)
    row["tags"] = columns.to_json(record.tags)
    row["created_at"] = columns.to_iso(record.created_at)
    row["created_epoch"] = columns.to_epoch(record.created_at)
    return row


def _from_row(row: Mapping[str, Any]) -> UsageRecord:
    # A column added by a later migration than the database's reads as its default.
    fields = {name: row[name] for name in _STORED if name in row}
    fields["cache_hit"] = bool(row["cache_hit"])
    fields["tags"] = columns.json_strings(row["tags"])
    fields["created_at"] = columns.from_iso(row["created_at"])
    return UsageRecord(**fields)


def insert_records(
    db: Handle,
    records: Iterable[UsageRecord],
    *,
    batch_id: str | None = None,
    responses: Sequence[StoredRow] = (),
) -> int:
    """Insert records in one transaction (group commit), with their rollups; return how
    many. On PostgreSQL the rows go in through one `COPY` (one statement and one stream
    of data however many rows; the rollups are upserts that add, so several nodes'
    batches sum). The request log's entries go in with them.

    With a `batch_id` the batch is written at most once: a batch id already written
    (`store.usage_batches`) writes nothing and returns 0, so the usage writer can send
    an unanswered batch again. The stored responses' rows a batch carries (`responses`,
    `store.response_rows`) go in the same transaction."""
    batch = list(records)
    with db.atomic():
        if batch_id is not None and not usage_batches.claim(db, batch_id):
            return 0
        if dialect.of(db).is_postgres:
            from store.postgres import PgHandle  # psycopg: the `[postgres]` extra's

            assert isinstance(db, PgHandle)
            db.copy_rows("usage_records", _NAMES, [_copy_row(record) for record in batch])
        else:
            db.conn.executemany(_INSERT, [_to_row(record) for record in batch])
        usage_rollups.add_records(db, batch)
        request_log.add_records(db, batch)
        put_rows(db, responses)
    return len(batch)


def _copy_row(record: UsageRecord) -> tuple[Any, ...]:
    row = _to_row(record)
    return tuple(row[name] for name in _NAMES)


def totals_since(
    db: Handle,
    *,
    since: datetime,
    key_id: str | None = None,
    workspace_id: str | None = None,
    provider: str | None = None,
) -> UsageTotals:
    """Requests, tokens and cost of the records at or after `since`, filtered by the
    criteria given (all of them must match). Failed requests count as requests; requests
    the limits refused (429, recorded for analytics) were never admitted and do not.
    """
    where = ["created_epoch >= ?", "status <> 429"]
    params: list[Any] = [columns.to_epoch(since)]
    for column, value in (
        ("key_id", key_id),
        ("workspace_id", workspace_id),
        ("provider", provider),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    row = db.execute(
        "SELECT count(*), coalesce(sum(prompt_tokens + completion_tokens), 0), "
        f"coalesce(sum(cost_usd), 0.0) FROM usage_records WHERE {' AND '.join(where)}",
        params,
    ).fetchone()
    return UsageTotals(requests=int(row[0]), tokens=int(row[1]), cost_usd=float(row[2]))


@attrs.frozen
class RequestCounts:
    """Requests of one key since the start of a day and since the start of its month."""

    daily: int
    monthly: int


def request_counts(
    db: Handle,
    key_id: str,
    *,
    day_start: datetime,
    month_start: datetime,
    endpoints: Sequence[str],
) -> RequestCounts:
    """Requests admitted for a key to `endpoints` since `day_start` and since
    `month_start` (the starts of a daily and a monthly limit's periods; `month_start <=
    day_start`). Requests its limits refused (recorded with status 429, for analytics) are
    not admitted ones and do not count.

    One statement reads both, so the two counts agree with each other; it is answered
    from the (key, endpoint, time) index and the matching rows' status.
    """
    if not endpoints:
        return RequestCounts(0, 0)
    marks = ", ".join("?" for _ in endpoints)
    row = db.execute(
        "SELECT count(*), count(*) FILTER (WHERE created_epoch >= ?) FROM usage_records "
        f"WHERE key_id = ? AND endpoint IN ({marks}) AND created_epoch >= ? AND status <> 429",
        [columns.to_epoch(day_start), key_id, *endpoints, columns.to_epoch(month_start)],
    ).fetchone()
    return RequestCounts(daily=int(row[1]), monthly=int(row[0]))


def list_for_request(db: Handle, request_id: str) -> list[UsageRecord]:
    """The records of one request (several when a pipeline made several upstream calls)."""
    rows = db.query(
        "SELECT * FROM usage_records WHERE request_id = ? ORDER BY created_epoch, rowid",
        [request_id],
    )
    return [_from_row(row) for row in rows]


def success_rate_since(
    db: Handle, *, workspace_id: str, provider: str, since: datetime
) -> float | None:
    """Share of a provider's requests since `since` that the provider did not fail (no 5xx);
    None when there were none. Client mistakes (4xx) do not count against the provider.
    """
    row = db.execute(
        "SELECT count(*), count(*) FILTER (WHERE status < 500) FROM usage_records "
        "WHERE workspace_id = ? AND provider = ? AND created_epoch >= ?",
        [workspace_id, provider, columns.to_epoch(since)],
    ).fetchone()
    total, ok = int(row[0]), int(row[1])
    return ok / total if total else None


@attrs.frozen
class WindowFigures:
    """A workspace's traffic over a window: what usage alerts compare with thresholds.
    Latency percentiles (nearest rank, successful requests) are None without any."""

    requests: int
    errors: int
    tokens: int
    cost_usd: float
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None


def window_figures(
    db: Handle, *, workspace_id: str, since: datetime, until: datetime
) -> WindowFigures:
    """Requests in [since, until): counts, failures (status >= 400), tokens, cost, and the
    latency percentiles of the successful ones, read by ordered offsets in SQL (a busy
    week is not loaded into memory)."""
    span = [workspace_id, columns.to_epoch(since), columns.to_epoch(until)]
    where = "workspace_id = ? AND created_epoch >= ? AND created_epoch < ?"
    row = db.execute(
        "SELECT count(*), count(*) FILTER (WHERE status >= 400), "
        "coalesce(sum(prompt_tokens + completion_tokens), 0), coalesce(sum(cost_usd), 0.0) "
        f"FROM usage_records WHERE {where}",
        span,
    ).fetchone()
    ok = int(row[0]) - int(row[1])

    def at_rank(fraction: float) -> float | None:
        if ok == 0:
            return None
        rank = max(1, math.ceil(fraction * ok))
        found = db.execute(
            f"SELECT latency_ms FROM usage_records WHERE {where} AND status < 400 "
            "ORDER BY latency_ms LIMIT 1 OFFSET ?",
            [*span, rank - 1],
        ).fetchone()
        return None if found is None else float(found[0])

    return WindowFigures(
        requests=int(row[0]),
        errors=int(row[1]),
        tokens=int(row[2]),
        cost_usd=float(row[3]),
        latency_p50_ms=at_rank(0.50),
        latency_p99_ms=at_rank(0.99),
    )


def median_latency_ms(
    db: Handle, *, workspace_id: str, provider: str | None, since: datetime
) -> float | None:
    """Median latency of the successful requests since `since` (of one provider, or of
    all); None when there were none. Read with one ordered offset, not by loading rows."""
    where = "workspace_id = ? AND created_epoch >= ? AND status < 400"
    params: list[Any] = [workspace_id, columns.to_epoch(since)]
    if provider is not None:
        where += " AND provider = ?"
        params.append(provider)
    row = db.execute(
        f"SELECT latency_ms FROM usage_records WHERE {where} ORDER BY latency_ms "
        f"LIMIT 1 OFFSET (SELECT count(*) / 2 FROM usage_records WHERE {where})",
        params + params,
    ).fetchone()
    return None if row is None else float(row[0])
