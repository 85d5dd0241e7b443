"""GET /v1/management/rate-limits: the caller key's limits and its workspace's providers.

`api_key` gives, for rpm, tpm, daily and monthly, the `limit`, what `remaining` of it, and
`reset_at` (when the counter is back to its full allowance). `providers` maps each
configured provider of the workspace to its rpm and tpm `limit` (from the provider's
settings, null when unknown) and `remaining` (null when the limit is unknown).

Any valid key may read its own `api_key` section, so that a client can pace itself; the
`providers` section describes the whole workspace's upstream capacity and is present only
for a caller whose role may view analytics (a key with the management or admin permission,
a service account or member of such a role); an ordinary key's answer has `api_key` alone,
a user token's `providers` alone.
"""

from __future__ import annotations

from typing import Annotated, NotRequired, TypedDict, cast

from quart import Blueprint, Response, request

from gateway.admin.services import AdminServices
from gateway.platform.answers import Time
from gateway.platform.apidoc import WORKSPACE_HEADER, operation
from gateway.platform.roles import allowed
from gateway.platform.shapes import Doc
from gateway.platform.web import json_response
from gateway.upstream.limits import Snapshot
from gateway.upstream.limits.headers import iso_z


class Window(TypedDict):
    """A limit of the key: null when the key has none."""

    limit: int | None
    remaining: int | None
    reset_at: Annotated[Time, Doc("When the counter is back to its full allowance")]


class Concurrency(TypedDict):
    limit: int | None
    current: int


class KeyFigures(TypedDict):
    """The calling key's limits and what is left of them."""

    id: str
    rpm: Window
    tpm: Window
    daily: Window
    monthly: Window
    concurrent: Concurrency


class Capacity(TypedDict):
    """A provider's limit from its settings (null: unknown) and what is left of it."""

    limit: int | None
    remaining: int | None


class ProviderCapacity(TypedDict):
    rpm: Capacity
    tpm: Capacity


class RateLimits(TypedDict):
    """`api_key` for a key (not a person's token); `providers`, by provider id, for a
    role that may view analytics."""

    api_key: NotRequired[KeyFigures]
    providers: NotRequired[dict[str, ProviderCapacity]]


def rate_limits_blueprint(admin: AdminServices) -> Blueprint:
    bp = Blueprint("rate_limits", __name__)

    @bp.get("/v1/management/rate-limits")
    @operation(
        "The caller's limits and what is left of them",
        "rate-limits",
        answer=RateLimits,
        headers=(WORKSPACE_HEADER,),
        description="Any valid key reads its own limits; the workspace's providers are "
        "shown to a role that may view analytics.",
        errors={404: "workspace_not_found"},
    )
    async def rate_limits() -> Response:
        principal = await admin.auth.any(request)
        principal = principal.in_workspace(request.headers.get("x-workspace-id") or None)
        body: RateLimits = {}
        if principal.kind != "user":  # a person's token has no key limits of its own
            snap = await admin.limits.current(principal.key)
            body["api_key"] = key_figures(principal.key_id, snap)
        if allowed(principal.role, "view_analytics"):
            body["providers"] = provider_figures(admin, principal.workspace_id)
        return json_response(body)

    return bp


def provider_figures(admin: AdminServices, workspace: str) -> dict[str, ProviderCapacity]:
    """Each configured provider's rpm and tpm: the workspace's upstream capacity."""
    return {
        provider_id: cast(
            ProviderCapacity,
            admin.upstream.figures(workspace, provider_id, entry.record.settings).to_api(),
        )
        for provider_id, entry in sorted(admin.registry.configured(workspace).items())
    }


def key_figures(key_id: str, snap: Snapshot) -> KeyFigures:
    """The `api_key` object: each limit with what remains and when it resets."""
    limits = snap.limits
    return {
        "id": key_id,
        "rpm": {
            "limit": limits.rpm,
            "remaining": snap.requests_remaining,
            "reset_at": iso_z(snap.requests_reset_at),
        },
        "tpm": {
            "limit": limits.tpm,
            "remaining": snap.tokens_remaining,
            "reset_at": iso_z(snap.tokens_reset_at),
        },
        "daily": {
            "limit": limits.daily,
            "remaining": snap.daily_remaining,
            "reset_at": iso_z(snap.daily_reset_at),
        },
        "monthly": {
            "limit": limits.monthly,
            "remaining": snap.monthly_remaining,
            "reset_at": iso_z(snap.monthly_reset_at),
        },
        "concurrent": {"limit": limits.concurrent, "current": snap.inflight},
    }
