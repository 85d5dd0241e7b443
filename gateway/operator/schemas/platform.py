"""Health, metrics, the OpenAPI document, its viewer and the console."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    INT,
    NUM,
    STR,
    TIME,
    Operation,
    Schema,
    all_required,
    arr,
    nullable,
    obj,
    query,
)

DAY: Schema = {"type": "string", "format": "date"}

COMPONENT = obj(("status",), status=STR, latency_ms={"anyOf": [NUM, {"type": "null"}]})

OPERATIONS = {
    "health.health": Operation(
        "Liveness for load balancers",
        "health",
        all_required(status=STR, timestamp=TIME),
        public=True,
        errors=(),
    ),
    "health.detailed": Operation(
        "Health of the gateway's components and of each configured provider",
        "health",
        all_required(
            status={"enum": ["healthy", "degraded", "unhealthy"]},
            timestamp=TIME,
            components=all_required(
                api=COMPONENT,
                database=COMPONENT,
                cache=COMPONENT,
                providers={"type": "object", "additionalProperties": COMPONENT},
            ),
        ),
        errors=(401, 403),
    ),
    "metrics.metrics": Operation(
        "Prometheus metrics (text exposition format)",
        "operator",
        {"type": "string"},
        media_type="text/plain",
        errors=(401, 403),
        description=(
            "Readable with the metrics token (`GATEWAY_METRICS_TOKEN`, sent as a bearer "
            "token) or an admin API key."
        ),
    ),
    "openapi.document": Operation("This document", "operator", ANY_OBJ, public=True, errors=()),
    "openapi.viewer": Operation(
        "The document rendered by Swagger UI (served from the package)",
        "operator",
        {"type": "string"},
        media_type="text/html",
        public=True,
        errors=(),
    ),
    "openapi.viewer_asset": Operation(
        "Swagger UI's files",
        "operator",
        {"type": "string"},
        media_type="*/*",
        public=True,
        errors=(404,),
    ),
    "openapi.docs_index": Operation(
        "The documentation's index page (docs/README.md, rendered to HTML)",
        "operator",
        {"type": "string"},
        media_type="text/html",
        public=True,
        errors=(),
    ),
    "openapi.docs_page": Operation(
        "One documentation page (docs/<name>.md rendered to HTML), or an image it shows",
        "operator",
        {"type": "string"},
        media_type="text/html",
        public=True,
        errors=(404,),
        description=(
            "Every error's `doc_url` points at `/docs/pages/errors#<code>`. An image the pages "
            "show (`<name>.png`) is answered as `image/png`."
        ),
        alternatives=(("image/png", {"type": "string", "format": "binary"}),),
    ),
    "console.page": Operation(
        "The web console (sign in with an API key)",
        "operator",
        {"type": "string"},
        media_type="text/html",
        public=True,
        errors=(),
    ),
    "console.usage": Operation(
        "Usage over time for the console's charts (sums per bucket, provider and model)",
        "operator",
        all_required(
            object={"const": "usage_series"},
            bucket={"enum": ["minute", "hour", "day"]},
            hours=nullable(INT),
            since=TIME,
            until=TIME,
            buckets=arr({"type": "string", "format": "date-time"}),
            points=arr(
                obj(
                    ("start", "provider", "model", "reason", "requests"),
                    start=TIME,
                    provider=STR,
                    model=STR,
                    reason=nullable(STR),
                    requests=INT,
                    errors=INT,
                    prompt_tokens=INT,
                    completion_tokens=INT,
                    cost_usd=NUM,
                    energy_kwh=NUM,
                    carbon_gco2e=NUM,
                    cache_hits=INT,
                )
            ),
        ),
        query=(
            query(
                "hours",
                {"type": "integer", "minimum": 1, "maximum": 2160},
                "The last hours, as whole buckets ending with the current one (default 24).",
            ),
            query("start_date", DAY, "First UTC day (YYYY-MM-DD), with end_date; not with hours."),
            query("end_date", DAY, "Last UTC day (YYYY-MM-DD), included; with start_date."),
            query("bucket", {"enum": ["minute", "hour", "day"]}, "Default hour."),
        ),
        description=(
            "`buckets` lists the start of every bucket of the range, empty ones included "
            "(at most 2,000). A point whose `provider` is empty summed requests that "
            "reached no provider; `reason` is the error code that stopped them."
        ),
        errors=(400, 401, 403),
    ),
    "console.asset": Operation(
        "The web console's files",
        "operator",
        {"type": "string"},
        media_type="*/*",
        public=True,
        errors=(404,),
    ),
}
