"""The error codes a model call can answer besides a malformed body, for the OpenAPI
document of every route that calls a model through the engine (docs/errors.md): the
model's limits and filters, the key's and the agent's rights and limits, and the
providers' failures."""

from __future__ import annotations

from collections.abc import Mapping

MODEL_CALL_ERRORS: Mapping[int, tuple[str, ...]] = {
    400: (
        "unsupported_parameter",
        "invalid_fallback",
        "context_length_exceeded",
        "content_filter",
        "provider_not_configured",
    ),
    403: ("model_not_allowed", "agent_key_required", "agent_suspended"),
    404: ("model_not_found",),
    429: (
        "rate_limit_exceeded",
        "token_limit_exceeded",
        "concurrent_limit_exceeded",
        "daily_limit_exceeded",
        "monthly_limit_exceeded",
        "rpm_exceeded",
        "cost_limit_exceeded",
    ),
    502: ("provider_error", "invalid_model_output"),
    503: ("provider_unavailable", "model_overloaded", "limits_unavailable"),
    504: ("provider_timeout",),
}


def with_errors(*more: tuple[int, str]) -> dict[int, tuple[str, ...]]:
    """`MODEL_CALL_ERRORS` and a route's own codes, each given with its status."""
    found = dict(MODEL_CALL_ERRORS)
    for status, code in more:
        found[status] = (*found.get(status, ()), code)
    return found
