"""The analytics family: the eight read pages and the exports (gateway.analytics.render,
gateway.analytics.exports)."""

from __future__ import annotations

from gateway.operator.apidoc import (
    AUTH_ERRORS,
    INT,
    NUM,
    STR,
    STRS,
    TIME,
    Operation,
    Schema,
    all_required,
    arr,
    closed,
    nullable,
    obj,
    query,
)

TAG = "analytics"
ERRORS = (*AUTH_ERRORS, 404)
DAY: Schema = {"type": "string", "format": "date"}
N_NUM = nullable(NUM)
PERIOD = all_required(start=DAY, end=DAY)
PERIOD_QUERY = (
    query("start_date", DAY, "First UTC day (YYYY-MM-DD); default 29 days before end_date."),
    query("end_date", DAY, "Last UTC day, included; default today. At most 366 days."),
    query("workspace_id", STR, "Another workspace of the caller's (like X-Workspace-ID)."),
)
GRANULARITY = query("granularity", {"enum": ["hour", "day", "week", "month"]})
TOKENS = all_required(prompt=INT, completion=INT, total=INT)
LATENCY = all_required(p50=N_NUM, p95=N_NUM, p99=N_NUM)
COST = all_required(
    cost_usd=NUM,
    cache_savings_usd=NUM,
    effective_cost_usd=NUM,
)
BY_TYPE = all_required(
    rate_limit=INT,
    timeout=INT,
    provider_error=INT,
    invalid_request=INT,
)
ERROR_FIGURES = all_required(
    requests=INT,
    total_errors=INT,
    error_rate=N_NUM,
    by_type=BY_TYPE,
)
CACHE_FIGURES = all_required(
    hits=INT,
    misses=INT,
    hit_rate=N_NUM,
    tokens_saved=INT,
    cost_saved_usd=NUM,
)


def mapping(value: Schema) -> Schema:
    return {"type": "object", "additionalProperties": value}


def page(summary: str, response: Schema, *extra: Schema) -> Operation:
    return Operation(summary, TAG, response, query=(*PERIOD_QUERY, *extra), errors=ERRORS)


EXPORT = obj(
    ("export_id", "status", "download_url", "expires_at"),
    object={"const": "analytics_export"},
    export_id=STR,
    status={"enum": ["processing", "complete", "failed", "expired"]},
    format={"enum": ["csv", "json", "parquet"]},
    include=STRS,
    period=PERIOD,
    created_at=TIME,
    download_url=nullable(STR),
    expires_at=TIME,
    rows=nullable(INT),
    size_bytes=nullable(INT),
    error=nullable(STR),
)
EXPORT_REQUEST = closed(
    (),
    start_date=DAY,
    end_date=DAY,
    format={"enum": ["csv", "json", "parquet"]},
    include=arr({"enum": ["usage", "costs", "errors"]}, minItems=1),
)

OPERATIONS = {
    "analytics.usage": page(
        "Requests, tokens, cost and latency percentiles over a period, as a series",
        obj(
            ("period", "totals", "data"),
            period=PERIOD,
            granularity=STR,
            group_by=nullable(STR),
            totals=all_required(
                requests=INT,
                tokens=TOKENS,
                cost_usd=NUM,
                latency_ms=LATENCY,
            ),
            data=arr(
                all_required(
                    date=STR,
                    requests=INT,
                    tokens=INT,
                    cost_usd=NUM,
                )
            ),
        ),
        GRANULARITY,
        query("group_by", {"enum": ["model", "provider", "api_key"]}),
    ),
    "analytics.usage_models": page(
        "Usage per model and provider",
        all_required(
            period=PERIOD,
            models=arr(
                all_required(
                    model=STR,
                    provider=STR,
                    requests=INT,
                    tokens=all_required(prompt=INT, completion=INT),
                    cost_usd=NUM,
                    avg_latency_ms=N_NUM,
                )
            ),
        ),
    ),
    "analytics.usage_api_keys": page(
        "Usage per API key, with the requests its limits refused",
        all_required(
            period=PERIOD,
            api_keys=arr(
                all_required(
                    key_id=STR,
                    name=nullable(STR),
                    requests=INT,
                    tokens=INT,
                    cost_usd=NUM,
                    rate_limit_hits=INT,
                )
            ),
        ),
    ),
    "analytics.costs": page(
        "Costs at list prices, what the response cache saved, and what was billed",
        obj(
            ("period", "totals", "by_provider", "by_category", "data"),
            period=PERIOD,
            granularity=STR,
            totals=COST,
            by_provider=mapping(COST),
            by_category=all_required(
                chat=COST,
                embeddings=COST,
                audio=COST,
                other=COST,
            ),
            data=arr(obj(("date", "cost_usd", "cache_savings_usd"), date=STR) | COST),
        ),
        GRANULARITY,
    ),
    "analytics.performance": page(
        "Latency percentiles, throughput and reliability, overall and per provider",
        all_required(
            period=PERIOD,
            latency=all_required(
                p50_ms=N_NUM,
                p95_ms=N_NUM,
                p99_ms=N_NUM,
                avg_ms=N_NUM,
            ),
            throughput=all_required(
                requests_per_minute=NUM,
                tokens_per_minute=NUM,
            ),
            reliability=all_required(
                success_rate=N_NUM,
                error_rate=N_NUM,
                timeout_rate=N_NUM,
            ),
            by_provider=mapping(
                all_required(
                    requests=INT,
                    latency_p50_ms=N_NUM,
                    success_rate=N_NUM,
                )
            ),
        ),
    ),
    "analytics.errors": page(
        "Failed and refused requests by type, provider and model",
        obj(
            ("period", "total_errors", "error_rate", "by_type", "by_provider", "by_model"),
            period=PERIOD,
            requests=INT,
            total_errors=INT,
            error_rate=N_NUM,
            by_type=BY_TYPE,
            by_provider=mapping(ERROR_FIGURES),
            by_model=mapping(ERROR_FIGURES),
        ),
    ),
    "analytics.cache": page(
        "Response cache hits and misses of chat answers, and what the hits saved",
        all_required(
            period=PERIOD,
            totals=all_required(
                cache_hits=INT,
                cache_misses=INT,
                hit_rate=N_NUM,
                tokens_saved=INT,
                cost_saved_usd=NUM,
            ),
            by_model=mapping(CACHE_FIGURES),
        ),
    ),
    "analytics.realtime": Operation(
        "The last minute, the requests in flight and waiting, and provider status",
        TAG,
        all_required(
            timestamp=TIME,
            last_minute=all_required(
                requests=INT,
                tokens=INT,
                cost_usd=NUM,
                avg_latency_ms=N_NUM,
            ),
            active_requests=INT,
            queue_depth=INT,
            provider_status=mapping(STR),
        ),
        query=(PERIOD_QUERY[2],),
        errors=ERRORS,
    ),
    "analytics.create_export": Operation(
        "Export usage, costs and errors of a period as CSV, JSON or Parquet (built in the "
        "background)",
        TAG,
        EXPORT,
        status=202,
        request=EXPORT_REQUEST,
        query=(PERIOD_QUERY[2],),
        errors=ERRORS,
    ),
    "analytics.list_exports": Operation(
        "The workspace's latest exports, newest first (to follow and download them)",
        TAG,
        all_required(object={"const": "list"}, data=arr(EXPORT)),
        query=(
            query("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "Default 20."),
            PERIOD_QUERY[2],
        ),
        errors=ERRORS,
    ),
    "analytics.get_export": Operation(
        "An export: processing, then complete with its download address and expiry",
        TAG,
        EXPORT,
        query=(PERIOD_QUERY[2],),
        errors=ERRORS,
    ),
    "analytics.download_export": Operation(
        "The export's file (until it expires: then 410)",
        TAG,
        {"type": "string", "format": "binary"},
        media_type="application/octet-stream",
        alternatives=(
            ("text/csv", {"type": "string"}),
            ("application/json", {"type": "string"}),
            ("application/vnd.apache.parquet", {"type": "string", "format": "binary"}),
        ),
        query=(PERIOD_QUERY[2],),
        errors=(*ERRORS, 409, 410),
    ),
}
