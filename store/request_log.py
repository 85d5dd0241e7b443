"""The request log: what each model call did, kept for a bounded window, per workspace.

Rows come from usage records (`store.usage.UsageRecord` with `request_log` set), written
by `add_records` in the usage writer's own transaction, so the log costs the request path
nothing beyond the record it already builds. A row holds what the usage record holds
(key, models asked and served, provider, status and error code, tokens and metered
units, cost, latency, time to first token, cache hit), the race's attempts
(`LoggedAttempt`, as JSON), the W3C trace id, and, for workspaces that keep them, the
sealed bodies (PII-redacted and encrypted before they reach the writer's sink).

Reading is newest first by the row's `id` (insertion order), filtered, in pages whose
cursor is the last row's id. Rows leave through `purge_before` (the window) and
`remove_workspace` (a workspace's erasure), both inside `store.erasure.erase`.

SQL is written in the form SQLite and PostgreSQL both accept (`?` placeholders, no
boolean sums, no `INSERT OR ...`); `tests/store/test_request_log.py` runs on both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from store import columns
from store.handle import Handle

if TYPE_CHECKING:
    from store.usage import UsageRecord

MAX_LIMIT = 200


@dataclass(frozen=True, slots=True)
class LoggedAttempt:
    """One attempt of a request's race: which candidate, when it started (milliseconds
    after the request arrived), how it ended and after how long.

    A dataclass, not attrs: the usage writer's wire (`orjson`) encodes dataclasses in C.
    `outcome` is `won`, `failed`, `cancelled` (a loser, or the client went away) or
    `not_started`; `error` the spec's error code of a failure.
    """

    provider: str
    model: str
    try_number: int
    start_ms: float
    duration_ms: float | None
    outcome: str
    error: str | None = None


def logged_attempts(
    values: Iterable[LoggedAttempt | Mapping[str, Any]],
) -> tuple[LoggedAttempt, ...]:
    """attrs converter: attempts as dataclasses, from themselves or from the dicts the
    usage writer's wire decodes them into."""
    return tuple(
        value if isinstance(value, LoggedAttempt) else LoggedAttempt(**value) for value in values
    )


@attrs.frozen(kw_only=True)
class LogEntry:
    """One row of the request log, as read back."""

    row_id: int
    request_id: str
    workspace_id: str
    key_id: str
    created_at: datetime
    endpoint: str
    model_requested: str | None
    model: str
    provider: str
    status: int
    error_code: str | None
    prompt_tokens: int
    completion_tokens: int
    audio_seconds: float
    characters: int
    pages: int
    searches: int
    bytes_stored: int
    cost_usd: float
    latency_ms: float
    ttft_ms: float | None
    cache_hit: bool
    attempts: tuple[LoggedAttempt, ...]
    trace_id: str | None
    body: str | None  # the sealed bodies (a cipher text), None when not kept


@attrs.frozen(kw_only=True)
class LogQuery:
    """A page of one workspace's log: every filter given must match.

    `status` is one exact status; `status_class` its hundreds (4 for 4xx); `errors_only`
    any status from 400. `model` matches the model asked for or the model that served.
    """

    workspace_id: str
    limit: int = 50
    before_row: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    key_id: str | None = None
    model: str | None = None
    provider: str | None = None
    endpoint: str | None = None
    status: int | None = None
    status_class: int | None = None
    errors_only: bool = False
    error_code: str | None = None
    min_latency_ms: float | None = None
    request_id: str | None = None


_COLUMNS = (
    "request_id",
    "workspace_id",
    "key_id",
    "created_at",
    "created_epoch",
    "endpoint",
    "model_requested",
    "model",
    "provider",
    "status",
    "error_code",
    "prompt_tokens",
    "completion_tokens",
    "audio_seconds",
    "characters",
    "pages",
    "searches",
    "bytes_stored",
    "cost_usd",
    "latency_ms",
    "ttft_ms",
    "cache_hit",
    "attempts",
    "trace_id",
    "body",
)
_INSERT = (
    f"INSERT INTO request_log ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)})"
)


def _row(record: UsageRecord) -> tuple[Any, ...]:
    return (
        record.request_id,
        record.workspace_id,
        record.key_id,
        columns.to_iso(record.created_at),
        int(columns.to_epoch(record.created_at)),
        record.endpoint,
        record.model_requested,
        record.model,
        record.provider,
        record.status,
        record.error_code,
        record.prompt_tokens,
        record.completion_tokens,
        record.audio_seconds,
        record.characters,
        record.pages,
        record.searches,
        record.bytes_stored,
        record.cost_usd,
        record.latency_ms,
        record.ttft_ms,
        int(record.cache_hit),
        orjson.dumps(record.attempts).decode(),
        record.trace_id,
        record.body if record.body_sealed else None,  # never clear text at rest
    )


def add_records(db: Handle, records: Sequence[UsageRecord]) -> int:
    """Log the records that asked for it (`request_log`), inside the caller's
    transaction (the usage writer's batch); how many."""
    rows = [_row(record) for record in records if record.request_log]
    if rows:
        db.conn.executemany(_INSERT, rows)
    return len(rows)


def _entry(row: Mapping[str, Any]) -> LogEntry:
    return LogEntry(
        row_id=int(row["id"]),
        request_id=row["request_id"],
        workspace_id=row["workspace_id"],
        key_id=row["key_id"],
        created_at=columns.from_iso(row["created_at"]),
        endpoint=row["endpoint"],
        model_requested=row["model_requested"],
        model=row["model"],
        provider=row["provider"],
        status=int(row["status"]),
        error_code=row["error_code"],
        prompt_tokens=int(row["prompt_tokens"]),
        completion_tokens=int(row["completion_tokens"]),
        audio_seconds=float(row["audio_seconds"]),
        characters=int(row["characters"]),
        pages=int(row["pages"]),
        searches=int(row["searches"]),
        bytes_stored=int(row["bytes_stored"]),
        cost_usd=float(row["cost_usd"]),
        latency_ms=float(row["latency_ms"]),
        ttft_ms=None if row["ttft_ms"] is None else float(row["ttft_ms"]),
        cache_hit=bool(row["cache_hit"]),
        attempts=logged_attempts(orjson.loads(row["attempts"])),
        trace_id=row["trace_id"],
        body=row["body"],
    )


def _where(query: LogQuery) -> tuple[str, list[Any]]:
    clauses, params = ["workspace_id = ?"], [query.workspace_id]

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause)
        params.extend(values)

    if query.before_row is not None:
        add("id < ?", query.before_row)
    if query.since is not None:
        add("created_epoch >= ?", int(columns.to_epoch(query.since)))
    if query.until is not None:
        add("created_epoch < ?", int(columns.to_epoch(query.until)))
    for column, value in (
        ("key_id", query.key_id),
        ("provider", query.provider),
        ("endpoint", query.endpoint),
        ("status", query.status),
        ("error_code", query.error_code),
        ("request_id", query.request_id),
    ):
        if value is not None:
            add(f"{column} = ?", value)
    if query.model is not None:
        add("(model = ? OR model_requested = ?)", query.model, query.model)
    if query.status_class is not None:
        add("status >= ? AND status < ?", query.status_class * 100, query.status_class * 100 + 100)
    if query.errors_only:
        add("status >= ?", 400)
    if query.min_latency_ms is not None:
        add("latency_ms >= ?", query.min_latency_ms)
    return " AND ".join(clauses), params


def query(db: Handle, wanted: LogQuery) -> list[LogEntry]:
    """Up to `wanted.limit` entries matching every filter, newest first."""
    where, params = _where(wanted)
    limit = max(1, min(wanted.limit, MAX_LIMIT + 1))
    rows = db.query(
        f"SELECT * FROM request_log WHERE {where} ORDER BY id DESC LIMIT ?", [*params, limit]
    )
    return [_entry(row) for row in rows]


def entries_of(db: Handle, workspace_id: str, request_id: str) -> list[LogEntry]:
    """Every entry of one request in a workspace (a pipeline's stages, or a client that
    reused its `X-Request-ID`), oldest first; empty when the workspace has none."""
    rows = db.query(
        "SELECT * FROM request_log WHERE workspace_id = ? AND request_id = ? ORDER BY id",
        [workspace_id, request_id],
    )
    return [_entry(row) for row in rows]


def purge_before(db: Handle, moment: datetime) -> tuple[int, int]:
    """Delete the entries of requests made before `moment` (the log's window); (rows
    deleted, of which held bodies)."""
    epoch = int(columns.to_epoch(moment))
    bodies = db.execute(
        "SELECT count(*) FROM request_log WHERE created_epoch < ? AND body IS NOT NULL", [epoch]
    ).fetchone()[0]
    deleted = db.execute("DELETE FROM request_log WHERE created_epoch < ?", [epoch]).rowcount
    return int(deleted), int(bodies)


def oldest_before(db: Handle, moment: datetime) -> bool:
    """Whether any entry is older than `moment` (a purge has something to do)."""
    epoch = int(columns.to_epoch(moment))
    found = db.execute(
        "SELECT 1 FROM request_log WHERE created_epoch < ? LIMIT 1", [epoch]
    ).fetchone()
    return found is not None


def remove_workspace(db: Handle, workspace_id: str) -> int:
    """Delete a workspace's whole log (its erasure); rows deleted."""
    cursor = db.execute("DELETE FROM request_log WHERE workspace_id = ?", [workspace_id])
    return int(cursor.rowcount)


def drop_bodies(db: Handle, workspace_id: str) -> int:
    """Forget the bodies a workspace kept (it turned them off); entries stay."""
    cursor = db.execute(
        "UPDATE request_log SET body = NULL WHERE workspace_id = ? AND body IS NOT NULL",
        [workspace_id],
    )
    return int(cursor.rowcount)


def keeps_bodies(db: Handle) -> set[str]:
    """The workspaces whose request log keeps bodies."""
    rows = db.execute("SELECT id FROM workspaces WHERE request_log_bodies <> 0").fetchall()
    return {str(row[0]) for row in rows}


def set_keeps_bodies(db: Handle, workspace_id: str, keep: bool) -> bool:
    """Turn a workspace's bodies on or off; False when there is no such workspace."""
    cursor = db.execute(
        "UPDATE workspaces SET request_log_bodies = ? WHERE id = ?", [int(keep), workspace_id]
    )
    return cursor.rowcount > 0
