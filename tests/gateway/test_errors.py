"""Every adapter exception becomes the spec's provider-error answer (pure table)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.platform.errors import from_provider_error
from providers import errors as e

CASES: list[tuple[e.ProviderError, int, str, dict[str, Any]]] = [
    (
        e.UpstreamTimeout("p", "slow", timeout_ms=1500),
        504,
        "provider_timeout",
        {"timeout_ms": 1500},
    ),
    (
        e.UpstreamUnavailable("p", "down", retry_after=7),
        503,
        "provider_unavailable",
        {"retry_after": 7, "status_url": "/v1/status"},
    ),
    (
        e.ModelOverloaded("p", "busy", model="m", retry_after=None),
        503,
        "model_overloaded",
        {"model": "m", "retry_after": 1},
    ),
    (
        e.ModelNotFound("p", "gone", model="m"),
        404,
        "model_not_found",
        {"model": "m", "available_models": ["a"]},
    ),
    (
        e.ContextLengthExceeded("p", "long", model="m", max_tokens=10, requested_tokens=20),
        400,
        "context_length_exceeded",
        {"model": "m", "max_tokens": 10, "requested_tokens": 20},
    ),
    (
        e.ContentFiltered("p", "no", filter_reason="SAFETY"),
        400,
        "content_filter",
        {"filter_reason": "SAFETY"},
    ),
    (
        e.InvalidUpstreamRequest("p", "bad", param="temperature", value=9),
        400,
        "invalid_request",
        {"param": "temperature", "value": 9},
    ),
    (e.Unsupported("p", "no rerank"), 400, "invalid_request", {"param": "model"}),
    (
        e.UpstreamHTTPError("p", "boom", status=500, vendor_type="api_error", vendor_code="x"),
        502,
        "provider_error",
        {"provider_error": {"type": "api_error", "message": "boom", "code": "x"}},
    ),
    (e.StreamInterrupted("p", "cut"), 502, "provider_error", {}),
    (e.AuthenticationFailed("p", "bad key"), 502, "provider_error", {}),
]


@pytest.mark.parametrize(("exc", "status", "code", "fields"), CASES)
def test_each_adapter_error_has_its_answer(
    exc: e.ProviderError, status: int, code: str, fields: dict[str, Any]
) -> None:
    error = from_provider_error(exc, available_models=["a"])
    body = error.body()["error"]
    assert error.status == status
    assert body["code"] == code and body["provider"] == "p"
    assert {"message", "type", "code", "doc_url"} <= set(body)
    for name, value in fields.items():
        assert body[name] == value
    if status == 503:
        assert error.headers["retry-after"] == str(body["retry_after"])
