"""The API-key management answers: a TypedDict per object (the OpenAPI document's schemas
are written from them) and the function that builds the key object from its record. The
key itself is never shown, save once: in the answer that creates (or rotates) it."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict, cast

from gateway.platform.answers import Time
from gateway.platform.shapes import Choices, Doc
from gateway.platform.web import iso
from store.keys import ApiKeyRecord
from store.secrets import KEY_KINDS


class KeyLimitsShown(TypedDict):
    """The key's limits; null: no limit of that kind."""

    rpm: int | None
    tpm: int | None
    daily_requests: int | None
    monthly_requests: int | None
    concurrent: int | None


class ApiKey(TypedDict):
    """The spec's API key object: a hint of the key, never the key."""

    id: str
    object: Literal["api_key"]
    name: str
    prefix: str
    key_hint: Annotated[str, Doc("The prefix and the last four characters")]
    type: Annotated[str, Choices(KEY_KINDS)]
    status: Annotated[str, Choices(("active", "revoked"))]
    created_at: Time
    updated_at: Time
    last_used_at: Time | None
    expires_at: Time | None
    revoked_at: Time | None
    rate_limits: KeyLimitsShown
    permissions: list[str]
    allowed_models: list[str]
    allowed_ips: list[str]


class NewApiKey(ApiKey):
    """A created key, with the key itself: in this answer only."""

    key: str


class UsageToday(TypedDict):
    """The key's use since the start of the UTC day."""

    requests_today: int
    tokens_today: int
    cost_today_usd: float


class ApiKeyRead(ApiKey):
    """A key with today's usage."""

    usage: UsageToday


class KeyChanged(TypedDict):
    """A changed key: its id, the fields the change named, and `updated_at`."""

    id: str
    updated_at: Time
    name: NotRequired[str]
    rate_limits: NotRequired[KeyLimitsShown]
    permissions: NotRequired[list[str]]
    expires_at: NotRequired[Time | None]
    allowed_models: NotRequired[list[str]]
    allowed_ips: NotRequired[list[str]]


class Rotated(TypedDict):
    """A rotation: the successor key (shown in this answer only) and when the old one
    stops working."""

    id: str
    new_key: str
    new_key_id: str
    old_key_expires_at: Time
    rotated_at: Time


class Revoked(TypedDict):
    id: str
    status: Literal["revoked"]
    revoked_at: Time


def key_to_api(record: ApiKeyRecord) -> ApiKey:
    """The spec's API key object (never the key itself; a hint instead)."""
    return {
        "id": record.id,
        "object": "api_key",
        "name": record.name,
        "prefix": record.prefix,
        "key_hint": f"{record.prefix}...{record.last_four}",
        "type": record.kind,
        "status": record.status,
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
        "last_used_at": iso(record.last_used_at),
        "expires_at": iso(record.expires_at),
        "revoked_at": iso(record.revoked_at),
        "rate_limits": {
            "rpm": record.rate_limits.rpm,
            "tpm": record.rate_limits.tpm,
            "daily_requests": record.rate_limits.daily_requests,
            "monthly_requests": record.rate_limits.monthly_requests,
            "concurrent": record.rate_limits.concurrent,
        },
        "permissions": list(record.permissions),
        "allowed_models": list(record.allowed_models),
        "allowed_ips": list(record.allowed_ips),
    }


def changed(record: ApiKeyRecord, names: list[str]) -> KeyChanged:
    """The answer to a change: the fields named, as the key object shows them."""
    shown: dict[str, object] = dict(key_to_api(record))
    body = {"id": record.id, **{name: shown[name] for name in names}}
    return cast(KeyChanged, body | {"updated_at": shown["updated_at"]})
