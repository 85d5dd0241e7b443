"""The request log (`gateway.requestlog`): a workspace's model calls, newest first, and
one request's entries with the attempts of its race."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    AUTH_ERRORS,
    BOOL,
    INT,
    NUM,
    STR,
    Operation,
    Schema,
    all_required,
    arr,
    nullable,
    obj,
    query,
)

TAG = "request-log"
DATE_TIME: Schema = {"type": "string", "format": "date-time"}
ATTEMPT = all_required(
    provider=STR,
    model=STR,
    **{"try": INT},
    start_ms=NUM,
    duration_ms=nullable(NUM),
    outcome={"enum": ["won", "failed", "cancelled", "not_started"]},
    error=nullable(STR),
)
ENTRY_FIELDS: dict[str, Schema] = {
    "id": STR,
    "object": {"const": "request_log.entry"},
    "created_at": DATE_TIME,
    "endpoint": STR,
    "key_id": STR,
    "model_requested": nullable(STR),
    "model": nullable(STR),
    "provider": nullable(STR),
    "status": INT,
    "error_code": nullable(STR),
    "usage": all_required(
        prompt_tokens=INT,
        completion_tokens=INT,
        total_tokens=INT,
        audio_seconds=NUM,
        characters=INT,
        pages=INT,
        searches=INT,
        bytes_stored=INT,
    ),
    "cost_usd": NUM,
    "latency_ms": NUM,
    "ttft_ms": nullable(NUM),
    "cache_hit": BOOL,
    "trace_id": nullable(STR),
    "attempts": arr(ATTEMPT),
    "body_kept": BOOL,
}
# `body` (the read of one request, for owners and admins, when the workspace keeps bodies):
# the request as sent and the answer, PII redacted.
ENTRY = obj(
    tuple(ENTRY_FIELDS),
    **ENTRY_FIELDS,
    body=all_required(request={}, response=nullable(ANY_OBJ)),
)
TEXT: Schema = {"type": "string", "minLength": 1, "maxLength": 256}

OPERATIONS = {
    "request_log.request_log": Operation(
        "The workspace's model calls, newest first, filtered, paged by cursor",
        TAG,
        all_required(
            object={"const": "list"},
            data=arr(ENTRY),
            has_more=BOOL,
            next_cursor=nullable(STR),
        ),
        errors=(*AUTH_ERRORS, 404),
        query=(
            query("limit", {"type": "integer", "minimum": 1, "maximum": 200}, "Default 50"),
            query("cursor", STR, "The previous page's next_cursor"),
            query("since", STR, "From this date (YYYY-MM-DD) or ISO 8601 time"),
            query("until", STR, "Before this date (YYYY-MM-DD) or ISO 8601 time"),
            query("key_id", TEXT, "Only this API key's requests"),
            query("model", TEXT, "The model asked for or the model that served"),
            query("provider", TEXT, "The provider that served (or failed) the call"),
            query("endpoint", TEXT, "The family: chat, embeddings, audio.speech, ..."),
            query(
                "status",
                {"type": "string", "pattern": "^([1-5][0-9][0-9]|[1-5]xx|error)$"},
                "A status (502), a class (5xx) or error (any status from 400)",
            ),
            query("error_code", TEXT, "The error envelope's code, e.g. provider_timeout"),
            query("min_latency_ms", {"type": "number", "minimum": 0}),
        ),
    ),
    "request_log.request_log_entry": Operation(
        "One request's entries (a pipeline's stages are several), with their attempts",
        TAG,
        all_required(
            id=STR,
            object={"const": "request_log.request"},
            entries=arr(ENTRY, minItems=1),
        ),
        errors=(*AUTH_ERRORS, 404),
    ),
}
