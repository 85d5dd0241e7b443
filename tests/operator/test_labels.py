"""Metric labels stay bounded: families from a table, open sets capped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.operator.families import family_of
from gateway.operator.metrics import RAW_ANSWER_KEYS, BoundedLabel, GatewayMetrics
from store.request_log import LoggedAttempt
from store.usage import UsageRecord
from tests.operator.prom import samples, total


@pytest.mark.parametrize(
    ("path", "family"),
    [
        ("/v1/chat/completions", "chat"),
        ("/v1/embeddings", "embeddings"),
        ("/v1/models/gpt-4o-mini", "models"),
        ("/v1/audio/speech", "audio"),
        ("/v1/audio/pipelines", "pipelines"),
        ("/v1/audio/sessions", "realtime"),
        ("/v1/realtime", "realtime"),
        ("/v1/mcp/agents/agt_1", "agents"),
        ("/v1/mcp", "mcp"),
        ("/v1/management/api-keys/key_123/rotate", "management_api_keys"),
        ("/v1/management/routing-rules", "management_routing_rules"),
        ("/v1/management/console/usage", "management_console"),
        ("/v1/management/whatever-new", "other"),
        ("/v1/something-else", "other"),
        ("/health", "health"),
        ("/metrics", "metrics"),
        ("/openapi.json", "docs"),
        ("/docs/swagger-ui.css", "docs"),
        ("/console/console.js", "console"),
        ("/", "other"),
        ("/wp-admin/login.php", "other"),
    ],
)
def test_family_of(path: str, family: str) -> None:
    assert family_of(path) == family


def test_bounded_label_caps_distinct_values() -> None:
    label = BoundedLabel(limit=2)
    assert [label(v) for v in ("a", "b", "a", "c", None, "")] == [
        "a",
        "b",
        "a",
        "other",
        "none",
        "none",
    ]


def test_answers_are_counted_once_across_scrapes_and_stay_bounded() -> None:
    """Answers are kept per raw label values and folded into the request tallies at
    each scrape: a second scrape counts nothing twice, models past the label's cap are
    "other", and raw values past `RAW_ANSWER_KEYS` are still counted (and bounded)."""
    metrics = GatewayMetrics()
    many = RAW_ANSWER_KEYS + 10  # more raw models than are remembered, past the cap too
    for n in range(many):
        metrics.answered("chat", 200, "openai", f"model-{n}", 0.0045, 0.004)
    metrics.answered("chat", 429, None, None, 0.0005, 0.0)
    metrics.answered("chat", 200, "openai", "model-0", 0.02, 0.03)  # upstream > elapsed
    first = samples(metrics.render().decode())
    second = samples(metrics.render().decode())
    assert first == second
    assert total(first, "gateway_requests_total") == many + 2
    assert total(first, "gateway_requests_total", model="model-0") == 2
    assert total(first, "gateway_requests_total", model="other") == many - 512
    assert total(first, "gateway_rate_limit_refusals_total", family="chat") == 1
    assert total(first, "gateway_request_duration_seconds_count", model="model-0") == 2
    duration_sum = total(first, "gateway_request_duration_seconds_sum", model="model-0")
    assert duration_sum == pytest.approx(0.0245)
    overhead = "gateway_added_latency_seconds_bucket"
    assert total(first, overhead, le="0.001") == many + 2  # 0.0005 each, the 429's, and 0
    assert total(first, "gateway_added_latency_seconds_count") == many + 2


def _record(status: int, tokens: int, *, cache_hit: bool = False) -> UsageRecord:
    attempt = LoggedAttempt("openai", "gpt-4o-mini", 1, 0.0, 12.0, "won")
    failed = LoggedAttempt("anthropic", "claude-haiku-4-5", 1, 0.0, None, "failed", "timeout")
    return UsageRecord(
        request_id="r",
        key_id="k",
        workspace_id="w",
        model="gpt-4o-mini",
        provider="openai",
        endpoint="chat",
        status=status,
        created_at=datetime.now(UTC),
        prompt_tokens=tokens,
        completion_tokens=0,
        characters=7 if status == 201 else 0,
        cost_usd=0.5 if tokens else 0.0,
        cache_hit=cache_hit,
        ttft_ms=30.0,
        attempts=(attempt, failed),
    )


def test_usage_records_are_counted_once_across_scrapes() -> None:
    """Usage records are kept per raw values and folded at each scrape: a second scrape
    counts nothing twice, and a zero amount makes no sample, as when each was added."""
    metrics = GatewayMetrics()
    for record in (_record(200, 10), _record(200, 5, cache_hit=True), _record(500, 0)):
        metrics.observe_usage(record)
    metrics.observe_usage(_record(201, 0))  # characters: a metered unit
    first = samples(metrics.render().decode())
    assert first == samples(metrics.render().decode())
    assert total(first, "gateway_usage_records_total") == 4
    assert total(first, "gateway_usage_records_total", status="500") == 1
    assert total(first, "gateway_cache_hits_total", family="chat") == 1
    assert total(first, "gateway_tokens_total", direction="prompt") == 15
    assert not [
        key for key in first if key[0] == "gateway_tokens_total" and "completion" in str(key)
    ]
    assert total(first, "gateway_cost_usd_total") == 1.0
    assert total(first, "gateway_metered_units_total", unit="characters") == 7
    first_token = "gateway_time_to_first_token_seconds_count"
    assert total(first, first_token) == 3  # not the 500's
    assert total(first, "gateway_upstream_attempts_total", outcome="won") == 4
    assert total(first, "gateway_upstream_attempts_total", error="timeout") == 4
    assert total(first, "gateway_upstream_attempt_duration_seconds_count") == 4  # won ones
    assert total(first, "gateway_upstream_attempt_duration_seconds_count", outcome="failed") == 0
