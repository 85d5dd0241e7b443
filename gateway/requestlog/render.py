"""The request log's objects as the management API answers them (pure)."""

from __future__ import annotations

from typing import Any

from gateway.platform.web import iso
from store.request_log import LogEntry

ENTRY_OBJECT = "request_log.entry"


def entry(found: LogEntry, *, body: Any = None) -> dict[str, Any]:
    """One model call: who asked for what, what served it, how it ended, what it cost,
    and the attempts of its race (offsets in milliseconds from the request's arrival).
    `body`: the bodies kept, opened, when the caller may read them (the read of one
    request only)."""
    shown = {
        "id": found.request_id,
        "object": ENTRY_OBJECT,
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
        "attempts": [attempt.as_json() for attempt in found.attempts],
        "body_kept": found.body is not None,
    }
    if body is not None:
        shown["body"] = body
    return shown


def page(entries: list[LogEntry], next_cursor: str | None) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [entry(found) for found in entries],
        "has_more": next_cursor is not None,
        "next_cursor": next_cursor,
    }


def request(request_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One request: its entries oldest first (a pipeline's stages are several)."""
    return {"id": request_id, "object": "request_log.request", "entries": entries}
