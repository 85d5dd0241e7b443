"""Metric labels stay bounded: families from a table, open sets capped."""

from __future__ import annotations

import pytest

from gateway.operator.families import family_of
from gateway.operator.metrics import RAW_ANSWER_KEYS, BoundedLabel, GatewayMetrics
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
