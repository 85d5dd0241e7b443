"""Cohere's error answers: a bare `{"message": ...}` whose HTTP status carries the meaning
(the official SDK has one exception class per status; 498 is Cohere's invalid-token status).
"""

from __future__ import annotations

from collections.abc import Mapping

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

_AUTH_STATUSES = (401, 403, 498)


def error_message(status: int, body: bytes) -> str:
    parsed = read_json(body)
    if isinstance(parsed, dict) and parsed.get("message"):
        return str(parsed["message"])
    return f"upstream answered HTTP {status}"


def map_cohere_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """A Cohere error answer mapped by its status."""
    message = error_message(status, body)
    if status in _AUTH_STATUSES:
        return AuthenticationFailed(provider, message)
    if status == 404:
        return ModelNotFound(provider, message, model=model)
    if status == 429:
        return ModelOverloaded(
            provider, message, model=model, retry_after=retry_after_seconds(headers)
        )
    if status in (400, 422):
        return _bad_request(provider, message, model)
    if status == 503:
        return UpstreamUnavailable(provider, message, retry_after=retry_after_seconds(headers))
    if status == 504:
        return UpstreamTimeout(provider, message, timeout_ms=0)
    return UpstreamHTTPError(provider, message, status=status)


def _bad_request(provider: str, message: str, model: str) -> ProviderError:
    """A 400; Cohere says "too many tokens: total number of tokens in the prompt cannot
    exceed N - received M" when the prompt does not fit, which is its own error for us."""
    numbers = _too_many_tokens(message)
    if numbers is not None:
        limit, requested = numbers
        return ContextLengthExceeded(
            provider, message, model=model, max_tokens=limit, requested_tokens=requested
        )
    return InvalidUpstreamRequest(provider, message)


def _too_many_tokens(message: str) -> tuple[int, int] | None:
    if "too many tokens" not in message:
        return None
    digits = [int(word) for word in message.replace(".", " ").split() if word.isdigit()]
    return (digits[0], digits[1]) if len(digits) >= 2 else None
