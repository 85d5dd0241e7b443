"""Validating the bodies of the API-key management calls (pure)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

import attrs

from gateway.platform.auth import ALL_PERMISSIONS, DEFAULT_PERMISSIONS
from gateway.platform.errors import ApiError, invalid_request
from store.keys import RateLimits
from store.secrets import KeyKind

CREATABLE_KINDS = ("dev", "prod", "admin")
RATE_LIMIT_FIELDS = ("rpm", "tpm", "daily_requests", "monthly_requests", "concurrent")
# The least value of each limit (0 when absent). A monthly limit of 0 would refuse every
# request for a month: revoking the key says that better.
RATE_LIMIT_MINIMUM = {"monthly_requests": 1}
MAX_GRACE_HOURS = 24 * 30


@attrs.frozen
class KeySpec:
    name: str
    kind: KeyKind
    permissions: tuple[str, ...]
    rate_limits: RateLimits
    expires_at: datetime | None
    allowed_models: tuple[str, ...]
    allowed_ips: tuple[str, ...]


def parse_create(body: Mapping[str, Any], now: datetime) -> KeySpec:
    name = parse_name(body.get("name"))
    kind = body.get("type", "prod")
    if kind not in CREATABLE_KINDS:
        raise invalid_request("'type' must be one of dev, prod, admin.", param="type", value=kind)
    permissions = body.get("permissions")
    return KeySpec(
        name=name,
        kind=cast(KeyKind, kind),
        permissions=(
            DEFAULT_PERMISSIONS[kind] if permissions is None else parse_permissions(permissions)
        ),
        rate_limits=parse_rate_limits(body.get("rate_limits"), RateLimits()),
        expires_at=parse_expiry(body.get("expires_at"), now),
        allowed_models=parse_strings(body.get("allowed_models"), "allowed_models"),
        allowed_ips=parse_ips(body.get("allowed_ips")),
    )


def parse_name(value: Any) -> str:
    if value is None:
        raise invalid_request("'name' is required.", param="name")
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise invalid_request(
            "'name' must be a non-empty string of at most 200 characters.",
            param="name",
            value=value,
        )
    return value.strip()


def parse_permissions(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise invalid_request(
            "'permissions' must be an array of strings.", param="permissions", value=value
        )
    unknown = sorted(set(value) - set(ALL_PERMISSIONS))
    if unknown:
        raise invalid_request(
            f"Unknown permissions: {', '.join(unknown)}. Known: {', '.join(ALL_PERMISSIONS)}.",
            param="permissions",
            value=value,
        )
    return tuple(dict.fromkeys(value))


def parse_rate_limits(value: Any, current: RateLimits) -> RateLimits:
    """Merge a `rate_limits` object over `current`; null clears one limit."""
    if value is None:
        return current
    if not isinstance(value, dict):
        raise invalid_request("'rate_limits' must be an object.", param="rate_limits", value=value)
    unknown = sorted(set(value) - set(RATE_LIMIT_FIELDS))
    if unknown:
        raise invalid_request(
            f"Unknown rate limits: {', '.join(unknown)}; known: {', '.join(RATE_LIMIT_FIELDS)}.",
            param="rate_limits",
            value=value,
        )
    for name, limit in value.items():
        _check_limit(name, limit)
    return attrs.evolve(current, **value)


def _check_limit(name: str, limit: Any) -> None:
    least = RATE_LIMIT_MINIMUM.get(name, 0)
    if limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit >= least):
        return
    sign = "a positive" if least == 1 else "a non-negative"
    raise invalid_request(
        f"'rate_limits.{name}' must be {sign} integer or null.",
        param=f"rate_limits.{name}",
        value=limit,
    )


def parse_expiry(value: Any, now: datetime) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_request(
            "'expires_at' must be an ISO 8601 timestamp.", param="expires_at", value=value
        )
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise invalid_request(
            "'expires_at' must be an ISO 8601 timestamp.", param="expires_at", value=value
        ) from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if moment <= now:
        raise _invalid_expiry("'expires_at' must be in the future.", value)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:00:00-05:00 lies beyond year 9999 in UTC
        raise _invalid_expiry("'expires_at' is out of range.", value) from None


def _invalid_expiry(message: str, value: str) -> ApiError:
    """A well-formed timestamp the key cannot expire at (a refusal of meaning: the
    document cannot say "in the future")."""
    return ApiError(400, "invalid_expiry", message, param="expires_at", value=value)


def parse_strings(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise invalid_request(f"'{name}' must be an array of strings.", param=name, value=value)
    return tuple(value)


def parse_ips(value: Any) -> tuple[str, ...]:
    entries = parse_strings(value, "allowed_ips")
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise invalid_request(
                f"'{entry}' is not an IP address or CIDR network.",
                param="allowed_ips",
                value=entry,
            ) from None
    return entries


def parse_grace_hours(body: Mapping[str, Any]) -> int:
    value = body.get("grace_period_hours", 24)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_GRACE_HOURS:
        raise invalid_request(
            f"'grace_period_hours' must be an integer from 0 to {MAX_GRACE_HOURS}.",
            param="grace_period_hours",
            value=value,
        )
    return value
