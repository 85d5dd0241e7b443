"""Gemini's error bodies mapped to the `providers.errors` hierarchy."""

from __future__ import annotations

import json
import math
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
from providers.http import (
    read_json,
    retry_after_seconds,
)
from providers.types import (
    JSON,
)

CONTEXT_LENGTH = re.compile(r"input token count.*exceeds the maximum", re.IGNORECASE)
NUMBERS = re.compile(r"\d+")


def _error_object(body: bytes) -> JSON:
    parsed = read_json(body)
    if isinstance(parsed, list) and parsed:  # the JSON-array stream form wraps errors too
        parsed = parsed[0]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


def _detail_reasons(error: Mapping[str, Any]) -> set[str]:
    return {str(d.get("reason")) for d in error.get("details") or () if isinstance(d, dict)}


def _retry_delay(error: Mapping[str, Any], headers: Mapping[str, str]) -> int | None:
    """Seconds to wait, from the `google.rpc.RetryInfo` detail or a Retry-After header."""
    for detail in error.get("details") or ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0, math.ceil(float(delay[:-1])))
            except ValueError:
                break
    return retry_after_seconds(headers)


def map_google_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """A Google error answer (`{"error": {code, message, status, details}}`) mapped.

    Google answers an invalid API key with 400 (reason API_KEY_INVALID), not 401.
    """
    error = _error_object(body)
    message = str(error.get("message") or f"upstream answered HTTP {status}")
    kind = error.get("status")
    if status in (401, 403) or "API_KEY_INVALID" in _detail_reasons(error):
        return AuthenticationFailed(provider, message)
    if status == 404:
        return ModelNotFound(provider, message, model=model)
    if status == 400 and CONTEXT_LENGTH.search(message):
        # "The input token count (N) exceeds the maximum number of tokens allowed (M)."
        numbers = [int(n) for n in NUMBERS.findall(message)]
        requested, limit = numbers[:2] if len(numbers) >= 2 else (None, None)
        return ContextLengthExceeded(
            provider, message, model=model, max_tokens=limit, requested_tokens=requested
        )
    if status == 429:
        return ModelOverloaded(
            provider, message, model=model, retry_after=_retry_delay(error, headers)
        )
    if status == 503:
        return UpstreamUnavailable(provider, message, retry_after=_retry_delay(error, headers))
    if status == 504:
        return UpstreamTimeout(provider, message, timeout_ms=0)
    if status in (400, 422):
        return InvalidUpstreamRequest(provider, message)
    return UpstreamHTTPError(
        provider, message, status=status, vendor_type=str(kind) if kind else None
    )


def stream_error(provider: str, data: Mapping[str, Any]) -> ProviderError:
    """An error object sent in place of a stream event, mapped by its own code."""
    error = data.get("error") or {}
    status = int(error.get("code") or 500)
    return map_google_error(provider, status, json.dumps(data).encode(), {}, "")
