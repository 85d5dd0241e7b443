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
PERIOD = obj(("start", "end"), start=DAY, end=DAY)
PERIOD_QUERY = (
    query("start_date", DAY, "First UTC day (YYYY-MM-DD); default 29 days before end_date."),
    query("end_date", DAY, "Last UTC day, included; default today. At most 366 days."),
    query("workspace_id", STR, "Another workspace of the caller's (like X-Workspace-ID)."),
)
GRANULARITY = query("granularity", {"enum": ["hour", "day", "week", "month"]})
TOKENS = obj(("prompt", "completion", "total"), prompt=INT, completion=INT, total=INT)
LATENCY = obj(("p50", "p95", "p99"), p50=N_NUM, p95=N_NUM, p99=N_NUM)
COST = obj(
    ("cost_usd", "cache_savings_usd", "effective_cost_usd"),
    cost_usd=NUM,
    cache_savings_usd=NUM,
    effective_cost_usd=NUM,
)
BY_TYPE = obj(
    ("rate_limit", "timeout", "provider_error", "invalid_request"),
    rate_limit=INT,
    timeout=INT,
    provider_error=INT,
    invalid_request=INT,
)
ERROR_FIGURES = obj(
    ("requests", "total_errors", "error_rate", "by_type"),
    requests=INT,
    total_errors=INT,
    error_rate=N_NUM,
    by_type=BY_TYPE,
)
CACHE_FIGURES = obj(
    ("hits", "misses", "hit_rate", "tokens_saved", "cost_saved_usd"),
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
            totals=obj(
                ("requests", "tokens", "cost_usd", "latency_ms"),
                requests=INT,
                tokens=TOKENS,
                cost_usd=NUM,
                latency_ms=LATENCY,
            ),
            data=arr(
                obj(
                    ("date", "requests", "tokens", "cost_usd"),
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
        obj(
            ("period", "models"),
            period=PERIOD,
            models=arr(
                obj(
                    ("model", "provider", "requests", "tokens", "cost_usd", "avg_latency_ms"),
                    model=STR,
                    provider=STR,
                    requests=INT,
                    tokens=obj(("prompt", "completion"), prompt=INT, completion=INT),
                    cost_usd=NUM,
                    avg_latency_ms=N_NUM,
                )
            ),
        ),
    ),
    "analytics.usage_api_keys": page(
        "Usage per API key, with the requests its limits refused",
        obj(
            ("period", "api_keys"),
            period=PERIOD,
            api_keys=arr(
                obj(
                    ("key_id", "name", "requests", "tokens", "cost_usd", "rate_limit_hits"),
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
            by_category=obj(
                ("chat", "embeddings", "audio", "other"),
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
        obj(
            ("period", "latency", "throughput", "reliability", "by_provider"),
            period=PERIOD,
            latency=obj(
                ("p50_ms", "p95_ms", "p99_ms", "avg_ms"),
                p50_ms=N_NUM,
                p95_ms=N_NUM,
                p99_ms=N_NUM,
                avg_ms=N_NUM,
            ),
            throughput=obj(
                ("requests_per_minute", "tokens_per_minute"),
                requests_per_minute=NUM,
                tokens_per_minute=NUM,
            ),
            reliability=obj(
                ("success_rate", "error_rate", "timeout_rate"),
                success_rate=N_NUM,
                error_rate=N_NUM,
                timeout_rate=N_NUM,
            ),
            by_provider=mapping(
                obj(
                    ("requests", "latency_p50_ms", "success_rate"),
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
        obj(
            ("period", "totals", "by_model"),
            period=PERIOD,
            totals=obj(
                ("cache_hits", "cache_misses", "hit_rate", "tokens_saved", "cost_saved_usd"),
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
        obj(
            ("timestamp", "last_minute", "active_requests", "queue_depth", "provider_status"),
            timestamp=TIME,
            last_minute=obj(
                ("requests", "tokens", "cost_usd", "avg_latency_ms"),
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
