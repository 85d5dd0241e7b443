"""The figures of one key's limits at a moment, as headers and as 429 answers (pure).

Two notions of time, named as the spec names them:

- *reset* (`X-RateLimit-Reset-*`, `X-RateLimit-Reset`, the management view's `reset_at`):
  when the counter is back to its full allowance, i.e. when the newest request in the
  window leaves it (the next UTC midnight for the daily count, the start of the next UTC
  month for the monthly one);
- *retry* (`Retry-After`, the 429 body's `retry_after` and `reset_at`): when the refused
  request itself would be admitted if nothing else is taken meanwhile, i.e. when enough of
  the oldest entries have left the window.
"""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime
from typing import Any, Literal

import attrs

from gateway.platform.errors import ApiError
from gateway.upstream.limits.policy import EffectiveLimits
from gateway.upstream.limits.windows import ceil_seconds

LimitType = Literal["rpm", "tpm", "concurrent", "daily", "monthly"]
CODES: dict[LimitType, str] = {
    "rpm": "rate_limit_exceeded",
    "tpm": "token_limit_exceeded",
    "concurrent": "concurrent_limit_exceeded",
    "daily": "daily_limit_exceeded",
    "monthly": "monthly_limit_exceeded",
}
# What a route that admits requests under a key's limits may answer (its OpenAPI entry).
LIMIT_REFUSALS = {429: tuple(CODES.values())}
CONCURRENT_RETRY_AFTER_S = 1


@attrs.frozen
class Snapshot:
    """One key's usage against its limits. Times are Unix seconds."""

    limits: EffectiveLimits
    now: float
    requests_used: int
    requests_reset_at: float
    tokens_used: int
    tokens_reset_at: float
    inflight: int
    daily_used: int | None  # None when the key's day and month are not counted
    daily_reset_at: float
    monthly_used: int | None  # None when the key's day and month are not counted
    monthly_reset_at: float

    @property
    def requests_remaining(self) -> int:
        return max(0, self.limits.rpm - self.requests_used)

    @property
    def tokens_remaining(self) -> int:
        return max(0, self.limits.tpm - self.tokens_used)

    @property
    def daily_remaining(self) -> int | None:
        if self.limits.daily is None:
            return None
        return max(0, self.limits.daily - (self.daily_used or 0))

    @property
    def monthly_remaining(self) -> int | None:
        if self.limits.monthly is None:
            return None
        return max(0, self.limits.monthly - (self.monthly_used or 0))


def iso_z(unix: float) -> str:
    """ISO 8601 UTC with milliseconds and a trailing Z."""
    moment = datetime.fromtimestamp(unix, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_duration(seconds: float) -> str:
    """A wait as the chat protocol's reset headers write it: `850ms`, `12.5s`, `1m0s`."""
    ms = max(0, round(seconds * 1000))
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    minutes, rest = divmod(ms, 60_000)
    secs = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def rate_limit_headers(snap: Snapshot) -> dict[str, str]:
    """Every rate-limit header the spec names, for successful answers and 429s alike.

    The generic `X-RateLimit-Limit/-Remaining/-Reset` describe requests per minute.
    """
    return window_headers(
        snap.limits,
        requests_remaining=snap.requests_remaining,
        requests_reset_in=snap.requests_reset_at - snap.now,
        requests_reset_at=snap.requests_reset_at,
        tokens_remaining=snap.tokens_remaining,
        tokens_reset_in=snap.tokens_reset_at - snap.now,
        inflight=snap.inflight,
    )


def window_headers(
    limits: EffectiveLimits,
    *,
    requests_remaining: int,
    requests_reset_in: float,
    requests_reset_at: float,
    tokens_remaining: int,
    tokens_reset_in: float,
    inflight: int,
) -> dict[str, str]:
    """`rate_limit_headers` from the per-minute figures alone (what every answer shows;
    the day and month are not in the headers). The limits' own figures are written once
    per set of limits (`_limit_texts`)."""
    rpm, concurrent, tpm = _limit_texts(limits)
    requests_left = str(requests_remaining)
    return {
        "X-RateLimit-Limit-RPM": rpm,
        "X-RateLimit-Remaining-RPM": requests_left,
        "X-RateLimit-Concurrent": str(inflight),
        "X-RateLimit-Concurrent-Limit": concurrent,
        "X-RateLimit-Limit": rpm,
        "X-RateLimit-Remaining": requests_left,
        "X-RateLimit-Reset": str(math.ceil(requests_reset_at)),
        "X-RateLimit-Limit-Requests": rpm,
        "X-RateLimit-Remaining-Requests": requests_left,
        "X-RateLimit-Reset-Requests": format_duration(requests_reset_in),
        "X-RateLimit-Limit-Tokens": tpm,
        "X-RateLimit-Remaining-Tokens": str(tokens_remaining),
        "X-RateLimit-Reset-Tokens": format_duration(tokens_reset_in),
    }


@functools.lru_cache(maxsize=1024)
def _limit_texts(limits: EffectiveLimits) -> tuple[str, str, str]:
    return str(limits.rpm), str(limits.concurrent), str(limits.tpm)


class RateLimitExceeded(ApiError):
    """A 429 from the limiter; `retry_at` (limiter clock) is None when waiting cannot help
    by time alone (a concurrency slot frees on release; a too-large request never fits)."""

    def __init__(
        self,
        limit_type: LimitType,
        message: str,
        *,
        retry_at: float | None,
        headers: dict[str, str],
        **fields: Any,
    ) -> None:
        super().__init__(
            429,
            CODES[limit_type],
            message,
            type="rate_limit_error",
            headers=headers,
            limit_type=limit_type,
            **fields,
        )
        self.limit_type = limit_type
        self.retry_at = retry_at


def refusal(
    limit_type: LimitType,
    snap: Snapshot,
    *,
    wait_s: float | None,
    retry_at: float | None,
    requested: int | None = None,
) -> RateLimitExceeded:
    """The 429 for `limit_type`; `wait_s` (None: not applicable) sets the retry fields."""
    limit, current = _figures(limit_type, snap)
    headers = rate_limit_headers(snap)
    fields: dict[str, Any] = {"limit": limit, "current": current}
    if requested is not None:
        fields["requested"] = requested
    if wait_s is not None:
        retry_after = ceil_seconds(wait_s)
        headers["Retry-After"] = str(retry_after)
        fields["retry_after"] = retry_after
        fields["reset_at"] = iso_z(snap.now + wait_s)
    elif limit_type == "concurrent":
        # No time frees a slot (a request ending does), so the body names no wait; the
        # spec's 429 headers still include `Retry-After`, and clients that honour it (the
        # official SDKs retry a 429 after it) should poll soon rather than back off long.
        headers["Retry-After"] = str(CONCURRENT_RETRY_AFTER_S)
    message = _message(limit_type, limit, current, requested)
    return RateLimitExceeded(limit_type, message, retry_at=retry_at, headers=headers, **fields)


def _figures(limit_type: LimitType, snap: Snapshot) -> tuple[int, int]:
    limits = snap.limits
    match limit_type:
        case "rpm":
            return limits.rpm, snap.requests_used
        case "tpm":
            return limits.tpm, snap.tokens_used
        case "concurrent":
            return limits.concurrent, snap.inflight
        case "daily":
            return limits.daily or 0, snap.daily_used or 0
        case "monthly":
            return limits.monthly or 0, snap.monthly_used or 0


def _message(limit_type: LimitType, limit: int, current: int, requested: int | None) -> str:
    match limit_type:
        case "rpm":
            return f"Rate limit reached: {current} of {limit} requests per minute."
        case "tpm" if requested is not None and requested > limit:
            return (
                f"Request too large: it may use {requested} tokens, more than the limit of "
                f"{limit} tokens per minute."
            )
        case "tpm":
            return (
                f"Token limit reached: {current} of {limit} tokens per minute used; "
                f"this request needs {requested}."
            )
        case "concurrent":
            return f"Concurrency limit reached: {current} of {limit} requests in flight."
        case "daily":
            return f"Daily limit reached: {current} of {limit} requests today (UTC)."
        case "monthly":
            return f"Monthly limit reached: {current} of {limit} requests this month (UTC)."
