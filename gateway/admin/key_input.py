"""The bodies of the API-key management calls, declared: one attrs class per body, from
which both the OpenAPI document's schema and the server's checks come
(`gateway.platform.shapes`). What a declaration cannot say is checked after, here: an
expiry in the past (`invalid_expiry`), and which fields a change names (a `null` there
clears a field, while a field left out stays as it is).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import attrs

from gateway.platform.auth import ALL_PERMISSIONS, DEFAULT_PERMISSIONS
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import (
    NON_BLANK,
    NOT_NULL,
    Choices,
    Doc,
    Format,
    Length,
    Pattern,
    Range,
    needs_fields,
    parse,
)
from store.keys import RateLimits
from store.secrets import KeyKind

MAX_GRACE_HOURS = 24 * 30
OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

Name = Annotated[str, NON_BLANK, Length(most=200)]
Permission = Annotated[str, Choices(ALL_PERMISSIONS)]
Limit = Annotated[int, Range(least=0)]
ModelName = Annotated[str, Length(least=1)]
Address = Annotated[
    Annotated[
        str,
        Pattern(f"^({OCTET}\\.){{3}}{OCTET}(/([0-9]|[12][0-9]|3[0-2]))?$", "an IPv4 network"),
    ]
    | Annotated[str, Format("ipv6")],
    Doc("An IP address or a CIDR network"),
]
Expiry = Annotated[datetime, Doc("In the future (`invalid_expiry` otherwise)")]


@attrs.frozen
class KeyLimits:
    """Limits merged over the key's: a limit left out stays, null removes it. A monthly
    limit of 0 would refuse every request for a month: revoking the key says that better."""

    rpm: Limit | None = None
    tpm: Limit | None = None
    daily_requests: Limit | None = None
    monthly_requests: Annotated[int, Range(least=1)] | None = None
    concurrent: Limit | None = None


@attrs.frozen
class NewKey:
    """A new API key."""

    name: Name
    type: Literal["dev", "prod", "admin"] = "prod"
    permissions: (
        Annotated[tuple[Permission, ...], Doc("Left out or null: the type's defaults")] | None
    ) = None
    rate_limits: KeyLimits | None = None
    expires_at: Expiry | None = None
    allowed_models: tuple[ModelName, ...] | None = None
    allowed_ips: tuple[Address, ...] | None = None


@needs_fields(1)
@attrs.frozen
class KeyChange:
    """A change to a key: the fields named change (null clears a list, the expiry or a
    limit); the answer shows the changed fields."""

    name: Annotated[Name | None, NOT_NULL] = None
    rate_limits: KeyLimits | None = None
    permissions: Annotated[tuple[Permission, ...] | None, NOT_NULL] = None
    expires_at: Expiry | None = None
    allowed_models: tuple[ModelName, ...] | None = None
    allowed_ips: tuple[Address, ...] | None = None


@attrs.frozen
class Rotation:
    """How long the old key keeps working (hours; the old key's own expiry comes first)."""

    grace_period_hours: Annotated[int, Range(least=0, most=MAX_GRACE_HOURS)] = 24


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
    asked = parse(NewKey, body)
    return KeySpec(
        name=asked.name.strip(),
        kind=asked.type,
        permissions=(
            DEFAULT_PERMISSIONS[asked.type]
            if asked.permissions is None
            else tuple(dict.fromkeys(asked.permissions))
        ),
        rate_limits=merged_limits(body.get("rate_limits"), asked.rate_limits, RateLimits()),
        expires_at=_expiry(asked.expires_at, now),
        allowed_models=asked.allowed_models or (),
        allowed_ips=_networks(asked.allowed_ips),
    )


def parse_change(body: Mapping[str, Any], current: RateLimits, now: datetime) -> dict[str, Any]:
    """The store's new values of the fields `body` names (declared by `KeyChange`)."""
    asked = parse(KeyChange, body)
    readers: dict[str, Callable[[], Any]] = {
        "name": lambda: asked.name.strip() if asked.name else asked.name,
        "rate_limits": lambda: merged_limits(body["rate_limits"], asked.rate_limits, current),
        "permissions": lambda: tuple(dict.fromkeys(asked.permissions or ())),
        "allowed_models": lambda: asked.allowed_models or (),
        "allowed_ips": lambda: _networks(asked.allowed_ips),
        "expires_at": lambda: _expiry(asked.expires_at, now),
    }
    return {name: read() for name, read in readers.items() if name in body}


def parse_grace_hours(body: Mapping[str, Any]) -> int:
    return parse(Rotation, body).grace_period_hours


def merged_limits(raw: Any, asked: KeyLimits | None, current: RateLimits) -> RateLimits:
    """The limits `raw` names (read as `asked`) over `current`; null removes one."""
    if asked is None:
        return current
    return attrs.evolve(current, **{name: getattr(asked, name) for name in raw})


def _expiry(moment: datetime | None, now: datetime) -> datetime | None:
    if moment is None:
        return None
    shown = moment.isoformat()
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:00:00-05:00 lies beyond year 9999 in UTC
        raise _invalid_expiry("'expires_at' is out of range.", shown) from None
    if moment <= now:
        raise _invalid_expiry("'expires_at' must be in the future.", shown)
    return moment


def _invalid_expiry(message: str, value: str) -> ApiError:
    """A well-formed timestamp the key cannot expire at (a refusal of meaning: the
    document cannot say "in the future")."""
    return ApiError(400, "invalid_expiry", message, param="expires_at", value=value)


def _networks(entries: tuple[str, ...] | None) -> tuple[str, ...]:
    """The addresses as given, each one Python's `ipaddress` reads (the declaration's
    pattern and format admit only these)."""
    for index, entry in enumerate(entries or ()):
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise invalid_request(
                f"'{entry}' is not an IP address or CIDR network.",
                param=f"allowed_ips[{index}]",
                value=entry,
            ) from None
    return entries or ()
