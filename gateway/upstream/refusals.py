"""The error codes a request served through the engine can answer, by HTTP status, for
the routes' declared operations (`gateway.platform.apidoc.Operation.errors`): the key's
limits, an agent's limits, the model's resolution and the providers' failures. A route
lists the tables of the steps it takes, merged with its own codes (`merged`)."""

from __future__ import annotations

from collections.abc import Mapping

Codes = Mapping[int, str | tuple[str, ...]]

# The key's limits (`gateway.upstream.limits`); the shared limit store may be down.
KEY_LIMITS: Codes = {
    429: (
        "rate_limit_exceeded",
        "token_limit_exceeded",
        "concurrent_limit_exceeded",
        "daily_limit_exceeded",
        "monthly_limit_exceeded",
    ),
    503: "limits_unavailable",
}
# An agent's key is held to its agent's limits too (the admission policy of `agents`).
AGENT_LIMITS: Codes = {
    403: "agent_suspended",
    429: (
        "rpm_exceeded",
        "concurrent_limit_exceeded",
        "cost_limit_exceeded",
        "daily_limit_exceeded",
        "monthly_limit_exceeded",
    ),
}
# A named model: unknown, or not one the key may use (`gateway.upstream.resolve`).
MODEL: Codes = {403: "model_not_allowed", 404: "model_not_found"}
# The providers' failures, once retries and fallbacks are spent.
PROVIDERS: Codes = {
    502: ("provider_error", "invalid_model_output"),
    503: ("provider_unavailable", "model_overloaded"),
    504: "provider_timeout",
}

# What a chat call (through any door) refuses once its body's shape is right: a
# parameter the model cannot honour, a fallback no provider could serve, the model's
# context and filters, a forced provider the workspace has not configured; a document
# part naming one of the gateway's files (`gateway.chat.file_parts`): not the caller's,
# too large to send inline, or a key without the files permission; a model its vendor
# serves through another door only (`gateway.upstream.endpoints`).
CHAT: Codes = {
    400: (
        "unsupported_parameter",
        "invalid_fallback",
        "context_length_exceeded",
        "content_filter",
        "provider_not_configured",
    ),
    403: "insufficient_permissions",
    404: ("file_not_found", "model_endpoint_not_supported"),
    413: "file_too_large",
}


def merged(*tables: Codes) -> dict[int, tuple[str, ...]]:
    """The tables' codes by status, each code once, in the order given."""
    found: dict[int, tuple[str, ...]] = {}
    for table in tables:
        for status, codes in table.items():
            more = (codes,) if isinstance(codes, str) else codes
            found[status] = tuple(dict.fromkeys((*found.get(status, ()), *more)))
    return found


# Every step of a served request.
ENGINE = merged(KEY_LIMITS, AGENT_LIMITS, MODEL, PROVIDERS)
CHAT_CALL = merged(ENGINE, CHAT)
