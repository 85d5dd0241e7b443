"""Shared objects of the OpenAPI document (`#/components/schemas/...`)."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    STR,
    Schema,
    all_required,
    arr,
    nullable,
    obj,
)

ERROR = all_required(
    error=obj(
        ("message", "type", "code"),
        message=STR,
        type=STR,
        code=nullable(STR),
        doc_url=STR,
        param=nullable(STR),
    ),
)

# The `service` extension of a request body (`gateway.upstream.options`); null fields
# are left out. Families add their own fields (`prefer` for audio).
COUNT: Schema = {"type": "integer", "minimum": 0}
SERVICE_REQUEST = obj(
    cache=nullable({"enum": ["skip"]}) | {"description": "`skip`: answer without the cache"},
    fallbacks=nullable(arr(STR)),
    tags=nullable(ANY_OBJ),
    rate_limit_handling=nullable(
        obj(strategy=nullable({"enum": ["queue", "fallback"]}), max_wait_ms=nullable(COUNT))
    ),
    retry=nullable(obj(max_attempts=nullable(COUNT), retryable_errors=nullable(arr(STR)))),
)

COMPONENTS: dict[str, Schema] = {
    "Error": ERROR,
}
