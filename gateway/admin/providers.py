"""Providers as the management API sees them: configured (credentials encrypted before
they reach the store, never shown), summarised with their live health, tested against
the vendor, and written with their audit event; the routes are in `provider_routes`.
Every change reaches the in-memory registry before the response is sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlite_utils
import trio

from gateway.admin import provider_render as render
from gateway.admin.keys import start_of_day
from gateway.admin.services import AdminServices
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.platform.web import iso
from providers.catalog import ProviderInfo, round_cost
from providers.errors import ProviderError, Unsupported
from providers.upstream.guard import UnsafeUrl, check_registration, upstream_policy
from store import providers as provider_store
from store import usage
from store.audit import AuditEvent
from store.providers import ProviderRecord

TEST_DEADLINE_S = 15.0


async def configure_provider(
    admin: AdminServices,
    workspace_id: str,
    provider_id: str,
    credentials: dict[str, Any],
    settings: dict[str, Any],
    event: AuditEvent | None = None,
) -> ProviderRecord:
    """Store a (re)configuration and make it live; shared by the API and start-up.

    With `event` (an API call), the event is written in the same transaction."""
    encrypted = admin.cipher.encrypt(credentials)
    now = datetime.now(UTC)
    record = await write_record(
        admin,
        event,
        lambda d: provider_store.upsert_configuration(
            d,
            workspace_id=workspace_id,
            provider_id=provider_id,
            encrypted_credentials=encrypted,
            settings=settings,
            at=now,
        ),
    )
    assert record is not None, "an upsert always stores a record"
    admin.registry.put(record)
    return record


async def check_base_url_address(admin: AdminServices, given: Any) -> None:
    """A `settings.base_url` this request sets must lead where the operator's address
    policy lets providers go (`providers.upstream.guard`): a 400 `unsafe_base_url` naming
    it otherwise. A name that does not resolve yet is accepted; every connection is
    checked again when it opens."""
    url = given.get("base_url") if isinstance(given, dict) else None
    if url is None:
        return
    settings = admin.settings
    policy = upstream_policy(settings.upstream_private_addresses, settings.upstream_allowed_hosts)
    try:
        await check_registration(url, policy)
    except UnsafeUrl as exc:
        raise ApiError(
            400,
            "unsafe_base_url",
            f"'settings.base_url' may not point there: {exc} The operator's "
            "GATEWAY_UPSTREAM_PRIVATE_ADDRESSES and GATEWAY_UPSTREAM_ALLOWED_HOSTS decide.",
            param="settings.base_url",
            value=url,
        ) from None


def summary(
    admin: AdminServices, principal: Principal, info: ProviderInfo
) -> render.ProviderSummary:
    entry = admin.registry.get(principal.workspace_id, info.id)
    record = entry.record if entry is not None else None
    return {
        "id": info.id,
        "name": info.name,
        "status": record.status if record else "inactive",
        "configured": record is not None,
        "configured_at": iso(record.configured_at) if record else None,
        "models": [m.id for m in admin.catalog.models_of(info.id)],
        "health": _health_object(admin, principal, info.id, None) if record else None,
    }


async def detail(
    admin: AdminServices, principal: Principal, info: ProviderInfo
) -> render.ProviderDetail:
    entry = admin.registry.get(principal.workspace_id, info.id)
    record = entry.record if entry is not None else None
    ws = principal.workspace_id
    await admin.flush_usage()
    now = datetime.now(UTC)
    today = await admin.db.run(
        lambda d: usage.totals_since(d, since=start_of_day(now), workspace_id=ws, provider=info.id)
    )
    uptime = await admin.db.run(
        lambda d: usage.success_rate_since(
            d, workspace_id=ws, provider=info.id, since=now - timedelta(days=30)
        )
    )
    active = entry is not None and entry.active
    shown = summary(admin, principal, info)
    return {
        "id": shown["id"],
        "name": shown["name"],
        "status": shown["status"],
        "configured": shown["configured"],
        "configured_at": shown["configured_at"],
        "settings": dict(record.settings) if record else {},
        "credentials_updated_at": iso(record.credentials_updated_at) if record else None,
        "disabled_at": iso(record.disabled_at) if record else None,
        "capabilities": list(info.capabilities),
        "models": [
            {"id": m.id, "type": m.type, "available": active and m.status != "deprecated"}
            for m in admin.catalog.models_of(info.id)
        ],
        "health": _health_object(admin, principal, info.id, uptime) if record else None,
        "usage": {
            "requests_today": today.requests,
            "tokens_today": today.tokens,
            "cost_today_usd": round_cost(today.cost_usd),
        },
    }


def _health_object(
    admin: AdminServices, principal: Principal, provider_id: str, uptime: float | None
) -> render.ProviderHealth:
    figures = admin.health.figures(principal.workspace_id, provider_id)
    error: render.LastError | None = (
        {"time": iso(figures.last_error_time), "type": figures.last_error_type}
        if figures.last_error_time
        else None
    )
    return {
        "status": "degraded" if figures.status == "degraded" else "healthy",
        "latency_ms": figures.latency_ms,
        "last_check": iso(figures.last_check),
        "uptime_30d": round(uptime if uptime is not None else 1.0, 4),
        "last_error": error,
    }


def health_entry(admin: AdminServices, principal: Principal, provider_id: str) -> render.LiveHealth:
    figures = admin.health.figures(principal.workspace_id, provider_id)
    entry = admin.registry.get(principal.workspace_id, provider_id)
    status = "disabled" if entry is not None and not entry.active else figures.status
    return {
        "status": "healthy" if status == "unknown" else status,
        "latency_ms": figures.latency_ms,
        "success_rate": figures.success_rate,
        "samples": figures.samples,
        "last_error": (
            {"time": iso(figures.last_error_time), "type": figures.last_error_type}
            if figures.last_error_time
            else None
        ),
    }


async def live_test(
    admin: AdminServices, principal: Principal, provider_id: str
) -> render.ProviderTest:
    """One real call to the upstream (its model list), timed, under a deadline."""
    ws = principal.workspace_id
    adapter = admin.registry.adapter(ws, provider_id)
    tested_at = iso(datetime.now(UTC))
    if adapter is None:
        return _test_failure(
            provider_id, tested_at, None, "provider_disabled", "The provider is disabled."
        )
    started = time.perf_counter()
    try:
        with trio.fail_after(TEST_DEADLINE_S):
            models = await adapter.list_models()
    except Unsupported:
        models = [m.id for m in admin.catalog.models_of(provider_id)]
    except (ProviderError, trio.TooSlowError) as exc:
        latency = int((time.perf_counter() - started) * 1000)
        admin.health.record(
            ws, provider_id, ok=False, latency_ms=latency, error_type=type(exc).__name__
        )
        message = exc.message if isinstance(exc, ProviderError) else "no answer in time"
        return _test_failure(provider_id, tested_at, latency, type(exc).__name__, message)
    latency = int((time.perf_counter() - started) * 1000)
    admin.health.record(ws, provider_id, ok=True, latency_ms=latency)
    return {
        "id": provider_id,
        "test_result": "success",
        "latency_ms": latency,
        "models_available": models,
        "tested_at": tested_at,
    }


def _test_failure(
    provider_id: str, tested_at: str, latency: int | None, error_type: str, message: str
) -> render.ProviderTest:
    """The answer of a live test that failed (or could not be made)."""
    return {
        "id": provider_id,
        "test_result": "failure",
        "latency_ms": latency,
        "models_available": [],
        "tested_at": tested_at,
        "error": {"type": error_type, "message": message},
    }


def provider_event(principal: Principal, kind: str, provider_id: str) -> AuditEvent:
    return audit_event(principal, kind, target_type="provider", target_id=provider_id)


async def write_record(
    admin: AdminServices,
    event: AuditEvent | None,
    change: Callable[[sqlite_utils.Database], ProviderRecord | None],
) -> ProviderRecord | None:
    """A store write, with its audit event in the same transaction when there is one."""
    if event is None:
        return await admin.db.run(change)
    return await audited(admin.db, event, change)
