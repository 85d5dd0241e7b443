"""The request log's objects as the management API answers them (pure)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from gateway.platform.answers import Time
from gateway.platform.shapes import Choices, Count, Doc
from gateway.platform.web import iso
from store.request_log import LogEntry, LoggedAttempt

LoggedTry = TypedDict(
    "LoggedTry",
    {
        "provider": str,
        "model": str,
        "try": int,
        "start_ms": float,
        "duration_ms": float | None,
        "outcome": Annotated[str, Choices(("won", "failed", "cancelled", "not_started"))],
        "error": str | None,
    },
)
LoggedTry.__doc__ = "One call of a request's race, in milliseconds from the request's arrival."


class LoggedUsage(TypedDict):
    """What the call metered."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    audio_seconds: float
    characters: int
    pages: int
    searches: int
    bytes_stored: int


class LoggedBody(TypedDict):
    """The request as sent and the answer, PII redacted."""

    request: Any
    response: dict[str, Any] | None


class LoggedCall(TypedDict):
    """One model call of the request log."""

    id: str
    object: Literal["request_log.entry"]
    created_at: Time
    endpoint: str
    key_id: str
    model_requested: str | None
    model: str | None
    provider: str | None
    status: int
    error_code: str | None
    usage: LoggedUsage
    cost_usd: float
    latency_ms: float
    ttft_ms: float | None
    cache_hit: bool
    trace_id: str | None
    attempts: list[LoggedTry]
    body_kept: bool
    body: NotRequired[
        Annotated[
            LoggedBody,
            Doc("In the read of one request, for owners and admins, when the bodies were kept"),
        ]
    ]


class LogPage(TypedDict):
    """A page of the log, newest first."""

    object: Literal["list"]
    data: list[LoggedCall]
    has_more: bool
    next_cursor: Annotated[str, Doc("The `cursor` of the next page")] | None


class LoggedRequest(TypedDict):
    """One request's entries, oldest first (a pipeline's stages are several)."""

    id: str
    object: Literal["request_log.request"]
    entries: Annotated[list[LoggedCall], Count(least=1)]


def entry(found: LogEntry, *, body: LoggedBody | None = None) -> LoggedCall:
    """One model call: who asked for what, what served it, how it ended, what it cost,
    and the attempts of its race (offsets in milliseconds from the request's arrival).
    `body`: the bodies kept, opened, when the caller may read them (the read of one
    request only)."""
    shown: LoggedCall = {
        "id": found.request_id,
        "object": "request_log.entry",
        "created_at": iso(found.created_at),
        "endpoint": found.endpoint,
        "key_id": found.key_id,
        "model_requested": found.model_requested,
        "model": found.model or None,
        "provider": found.provider or None,
        "status": found.status,
        "error_code": found.error_code,
        "usage": {
            "prompt_tokens": found.prompt_tokens,
            "completion_tokens": found.completion_tokens,
            "total_tokens": found.prompt_tokens + found.completion_tokens,
            "audio_seconds": found.audio_seconds,
            "characters": found.characters,
            "pages": found.pages,
            "searches": found.searches,
            "bytes_stored": found.bytes_stored,
        },
        "cost_usd": found.cost_usd,
        "latency_ms": found.latency_ms,
        "ttft_ms": found.ttft_ms,
        "cache_hit": found.cache_hit,
        "trace_id": found.trace_id,
        "attempts": [_attempt(attempt) for attempt in found.attempts],
        "body_kept": found.body is not None,
    }
    if body is not None:
        shown["body"] = body
    return shown


def page(entries: list[LogEntry], next_cursor: str | None) -> LogPage:
    return {
        "object": "list",
        "data": [entry(found) for found in entries],
        "has_more": next_cursor is not None,
        "next_cursor": next_cursor,
    }


def request(request_id: str, entries: list[LoggedCall]) -> LoggedRequest:
    """One request: its entries oldest first (a pipeline's stages are several)."""
    return {"id": request_id, "object": "request_log.request", "entries": entries}


def _attempt(found: LoggedAttempt) -> LoggedTry:
    return {
        "provider": found.provider,
        "model": found.model,
        "try": found.try_number,
        "start_ms": found.start_ms,
        "duration_ms": found.duration_ms,
        "outcome": found.outcome,
        "error": found.error,
    }
