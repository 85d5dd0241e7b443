"""Anthropic's error bodies mapped to the `providers.errors` hierarchy."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from providers.errors import (
    AuthenticationFailed,
    ContextLengthExceeded,
    InvalidUpstreamRequest,
    ModelNotFound,
    ModelOverloaded,
    ProviderError,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.http import read_json, retry_after_seconds

# The HTTP status Anthropic documents for each error type; used for stream `error` events,
# which arrive after a 200 and so carry only the type.
STATUS_OF_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_TOO_LONG = re.compile(r"prompt is too long|exceed context limit", re.IGNORECASE)
_TOKEN_COUNTS = re.compile(r"(\d+) tokens > (\d+) maximum|(\d+) \+ \d+ > (\d+)")


def map_anthropic_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """An Anthropic error answer (`{"type": "error", "error": {type, message}}`) mapped."""
    parsed = read_json(body)
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return map_error_object(
        provider, status, error if isinstance(error, dict) else {}, headers, model
    )


def map_error_object(
    provider: str, status: int, error: Mapping[str, Any], headers: Mapping[str, str], model: str
) -> ProviderError:
    """The `error` object of an answer with HTTP `status`, as our hierarchy.

    413 `request_too_large` is a byte limit (32 MB) enforced before any tokenising, so it is
    an invalid request rather than a context-length error with token counts we lack.
    """
    kind = str(error.get("type") or "")
    message = str(error.get("message") or f"upstream answered HTTP {status}")
    if status in (401, 403):
        return AuthenticationFailed(provider, message)
    if status == 404:
        return ModelNotFound(provider, message, model=model)
    if status == 400 and _TOO_LONG.search(message):
        return _context_length(provider, message, model)
    if status in (429, 529):
        return ModelOverloaded(
            provider, message, model=model, retry_after=retry_after_seconds(headers)
        )
    if status == 503:
        return UpstreamUnavailable(provider, message, retry_after=retry_after_seconds(headers))
    if status == 504:
        return UpstreamTimeout(provider, message, timeout_ms=0)
    if status in (400, 413, 422):
        return InvalidUpstreamRequest(provider, message)
    return UpstreamHTTPError(provider, message, status=status, vendor_type=kind or None)


def _context_length(provider: str, message: str, model: str) -> ContextLengthExceeded:
    found = _TOKEN_COUNTS.search(message)
    requested = maximum = None
    if found:
        requested = int(found.group(1) or found.group(3))
        maximum = int(found.group(2) or found.group(4))
    return ContextLengthExceeded(
        provider, message, model=model, max_tokens=maximum, requested_tokens=requested
    )
