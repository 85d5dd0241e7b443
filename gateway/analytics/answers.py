"""What the analytics pages and exports answer: the shapes `gateway.analytics.render`,
`gateway.analytics.service` and `gateway.analytics.exports` build, from which the
OpenAPI document is written (`gateway.platform.shapes`).

Conventions (docs/analytics.md): costs in USD; rates are shares from 0 to 1, null when
there were no requests to share; latencies in milliseconds, null without any.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict

from gateway.platform.answers import Time
from gateway.platform.shapes import Doc, Format

Day = Annotated[str, Format("date")]
Rate = Annotated[float | None, Doc("A share from 0 to 1; null without requests")]
Millis = Annotated[float | None, Doc("Milliseconds; null without successful requests")]


class AnalyticsPeriod(TypedDict):
    """The UTC days the page covers, both included."""

    start: Day
    end: Day


class TokenTotals(TypedDict):
    prompt: int
    completion: int
    total: int


class Percentiles(TypedDict):
    p50: Millis
    p95: Millis
    p99: Millis


class UsageTotals(TypedDict):
    requests: int
    tokens: TokenTotals
    cost_usd: float
    latency_ms: Percentiles


class UsagePoint(TypedDict):
    """One bucket of the series (and one group's, with `group_by`: the group's label
    under its name)."""

    date: Annotated[str, Doc("The bucket's start: a day, or an hour's ISO 8601 instant")]
    requests: int
    tokens: int
    cost_usd: float
    model: NotRequired[str]
    provider: NotRequired[str]
    key_id: NotRequired[str]


class UsagePage(TypedDict):
    """Requests, tokens, cost and latency percentiles over a period, as a series."""

    period: AnalyticsPeriod
    granularity: Literal["hour", "day", "week", "month"]
    group_by: Literal["model", "provider", "api_key"] | None
    totals: UsageTotals
    data: list[UsagePoint]


class PromptAndCompletion(TypedDict):
    prompt: int
    completion: int


class ModelUsage(TypedDict):
    model: str
    provider: str
    requests: int
    tokens: PromptAndCompletion
    cost_usd: float
    avg_latency_ms: Millis


class ModelsPage(TypedDict):
    """Usage per model and provider, most requested first."""

    period: AnalyticsPeriod
    models: list[ModelUsage]


class KeyUsage(TypedDict):
    key_id: str
    name: Annotated[str | None, Doc("null for a deleted key")]
    requests: int
    tokens: int
    cost_usd: float
    rate_limit_hits: int


class ApiKeysPage(TypedDict):
    """Usage per API key, most requested first, with the requests its limits refused."""

    period: AnalyticsPeriod
    api_keys: list[KeyUsage]


class CostFigures(TypedDict):
    """`cost_usd` at list prices before the response cache, `effective_cost_usd` what
    was billed, `cache_savings_usd` the difference."""

    cost_usd: float
    cache_savings_usd: float
    effective_cost_usd: float


class CostPoint(CostFigures):
    date: str


class CostCategories(TypedDict):
    chat: CostFigures
    embeddings: CostFigures
    audio: CostFigures
    other: CostFigures


class CostsPage(TypedDict):
    """Costs at list prices, what the response cache saved, and what was billed."""

    period: AnalyticsPeriod
    granularity: Literal["hour", "day", "week", "month"]
    totals: CostFigures
    by_provider: dict[str, CostFigures]
    by_category: CostCategories
    data: list[CostPoint]


class LatencyFigures(TypedDict):
    p50_ms: Millis
    p95_ms: Millis
    p99_ms: Millis
    avg_ms: Millis


class Throughput(TypedDict):
    requests_per_minute: float
    tokens_per_minute: float


class Reliability(TypedDict):
    success_rate: Rate
    error_rate: Rate
    timeout_rate: Rate


class ProviderPerformance(TypedDict):
    requests: int
    latency_p50_ms: Millis
    success_rate: Rate


class PerformancePage(TypedDict):
    """Latency percentiles, throughput and reliability, overall and per provider."""

    period: AnalyticsPeriod
    latency: LatencyFigures
    throughput: Throughput
    reliability: Reliability
    by_provider: dict[str, ProviderPerformance]


class ErrorsByType(TypedDict):
    rate_limit: int
    timeout: int
    provider_error: int
    invalid_request: int


class ErrorFigures(TypedDict):
    requests: int
    total_errors: int
    error_rate: Rate
    by_type: ErrorsByType


class ErrorsPage(TypedDict):
    """Failed and refused requests by type, provider and model."""

    period: AnalyticsPeriod
    requests: int
    total_errors: int
    error_rate: Rate
    by_type: ErrorsByType
    by_provider: dict[str, ErrorFigures]
    by_model: dict[str, ErrorFigures]


class CacheFigures(TypedDict):
    hits: int
    misses: int
    hit_rate: Rate
    tokens_saved: int
    cost_saved_usd: float


class CacheTotals(TypedDict):
    cache_hits: int
    cache_misses: int
    hit_rate: Rate
    tokens_saved: int
    cost_saved_usd: float


class CachePage(TypedDict):
    """Response cache hits and misses of successful chat answers, and what hits saved."""

    period: AnalyticsPeriod
    totals: CacheTotals
    by_model: dict[str, CacheFigures]


class LastMinute(TypedDict):
    requests: int
    tokens: int
    cost_usd: float
    avg_latency_ms: Millis


class RealtimePage(TypedDict):
    """The last minute, the requests in flight and waiting, and each configured
    provider's health."""

    timestamp: Time
    last_minute: LastMinute
    active_requests: int
    queue_depth: int
    provider_status: dict[str, str]


ExportStatus = Literal["processing", "complete", "failed", "expired"]
ExportFormat = Literal["csv", "json", "parquet"]
Section = Literal["usage", "costs", "errors"]


class AnalyticsExport(TypedDict):
    """An export: `processing`, then `complete` with its download address and expiry
    (or `failed` with its `error`)."""

    object: Literal["analytics_export"]
    export_id: str
    status: ExportStatus
    format: ExportFormat
    include: list[Section]
    period: AnalyticsPeriod
    created_at: Time
    download_url: str | None
    expires_at: Time | None
    rows: int | None
    size_bytes: int | None
    error: str | None
