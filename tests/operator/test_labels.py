"""Metric labels stay bounded: families from a table, open sets capped."""

from __future__ import annotations

import pytest

from gateway.operator.families import family_of
from gateway.operator.metrics import BoundedLabel


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
