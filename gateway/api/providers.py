"""Management of providers: configure, list, read, settings, credentials, test,
enable/disable, delete, and live health.

Credentials are encrypted before they reach the store and never appear in an answer.
Every change reaches the in-memory registry before the response is sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlite_utils
import trio
from quart import Blueprint, Response

from gateway.api.audit_trail import audit_event, audited
from gateway.api.keys import start_of_day
from gateway.api.provider_input import (
    next_status,
    parse_credentials,
    parse_settings,
)
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, invalid_request, not_found
from gateway.platform.roles import Action
from gateway.platform.state import AppState
from gateway.platform.web import iso, json_response, read_object
from providers.catalog import ProviderInfo, round_cost
from providers.errors import ProviderError, Unsupported
from providers.upstream.guard import UnsafeUrl, check_registration, upstream_policy
from store import providers as provider_store
from store import usage
from store.audit import AuditEvent
from store.providers import ProviderRecord

TEST_DEADLINE_S = 15.0


async def configure_provider(
    state: AppState,
    workspace_id: str,
    provider_id: str,
    credentials: dict[str, Any],
    settings: dict[str, Any],
    event: AuditEvent | None = None,
) -> ProviderRecord:
    """Store a (re)configuration and make it live; shared by the API and start-up.

    With `event` (an API call), the event is written in the same transaction."""
    encrypted = state.cipher.encrypt(credentials)
    now = datetime.now(UTC)
    record = await _write(
        state,
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
    state.registry.put(record)
    return record


PROVIDERS = "/v1/management/providers"


def providers_blueprint(state: AppState) -> Blueprint:
    """The provider-management routes, bound to one app's state."""
    api = ProvidersApi(state)
    one = f"{PROVIDERS}/<provider_id>"
    bp = Blueprint("providers", __name__)
    bp.add_url_rule(PROVIDERS, "list_providers", api.list_providers, methods=["GET"])
    bp.add_url_rule(PROVIDERS, "configure", api.configure, methods=["POST"])
    bp.add_url_rule(f"{PROVIDERS}/health", "health", api.health, methods=["GET"])
    bp.add_url_rule(one, "read_provider", api.read_provider, methods=["GET"])
    bp.add_url_rule(one, "patch_provider", api.patch_provider, methods=["PATCH"])
    bp.add_url_rule(
        f"{one}/credentials", "update_credentials", api.update_credentials, methods=["POST"]
    )
    bp.add_url_rule(f"{one}/test", "test_provider", api.test_provider, methods=["POST"])
    bp.add_url_rule(f"{one}/disable", "disable", api.disable, methods=["POST"])
    bp.add_url_rule(f"{one}/enable", "enable", api.enable, methods=["POST"])
    bp.add_url_rule(one, "delete", api.delete, methods=["DELETE"])
    return bp


class ProvidersApi:
    """The handlers of the provider-management routes; one method per route."""

    def __init__(self, state: AppState) -> None:
        self.state = state

    async def list_providers(self) -> Response:
        principal = await self._manager("view_configuration")
        return json_response(
            {
                "providers": [
                    summary(self.state, principal, p) for p in self.state.catalog.providers()
                ]
            }
        )

    async def configure(self) -> Response:
        """Configure (or reconfigure) a catalog provider with its credentials and settings."""
        principal = await self._manager("configure_providers")
        body = await read_object()
        provider_id = body.get("provider")
        if not isinstance(provider_id, str) or not provider_id:
            raise invalid_request("'provider' is required.", param="provider", value=provider_id)
        info = self._known(provider_id)
        if "credentials" not in body:
            raise invalid_request("'credentials' is required.", param="credentials")
        credentials = parse_credentials(body["credentials"])
        settings = parse_settings(body.get("settings"), models=self._model_names(provider_id))
        await check_base_url_address(self.state, body.get("settings"))
        event = _event(principal, "provider.configured", provider_id)
        record = await configure_provider(
            self.state, principal.workspace_id, provider_id, credentials, settings, event
        )
        return json_response(
            {
                "id": provider_id,
                "name": info.name,
                "status": record.status,
                "configured": True,
                "configured_at": iso(record.configured_at),
                "models": [m.id for m in self.state.catalog.models_of(provider_id)],
            },
            201,
        )

    async def health(self) -> Response:
        """Live health figures of every provider configured in the caller's workspace."""
        principal = await self._manager("view_configuration")
        figures = {
            pid: _health_entry(self.state, principal, pid)
            for pid in self.state.registry.configured(principal.workspace_id)
        }
        return json_response({"providers": figures})

    async def read_provider(self, provider_id: str) -> Response:
        principal = await self._manager("view_configuration")
        info = self._known(provider_id)
        return json_response(await detail(self.state, principal, info))

    async def patch_provider(self, provider_id: str) -> Response:
        """Merge new settings into a configured provider's; answers with its detail."""
        principal = await self._manager("configure_providers")
        record = self._configured(principal, provider_id)
        body = await read_object()
        settings = parse_settings(
            body.get("settings"), record.settings, models=self._model_names(provider_id)
        )
        await check_base_url_address(self.state, body.get("settings"))
        now = datetime.now(UTC)
        ws = principal.workspace_id
        event = _event(principal, "provider.updated", provider_id)
        updated = await _write(
            self.state,
            event,
            lambda d: provider_store.update_settings(d, ws, provider_id, settings, now),
        )
        assert updated is not None
        self.state.registry.put(updated)
        return json_response(await detail(self.state, principal, self._known(provider_id)))

    async def update_credentials(self, provider_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = self._configured(principal, provider_id)
        next_status(record.status, "update_credentials")
        credentials = parse_credentials(_credential_fields(await read_object()))
        encrypted = self.state.cipher.encrypt(credentials)
        now = datetime.now(UTC)
        ws = principal.workspace_id
        event = _event(principal, "provider.credentials_updated", provider_id)
        updated = await _write(
            self.state,
            event,
            lambda d: provider_store.update_credentials(d, ws, provider_id, encrypted, now),
        )
        assert updated is not None
        self.state.registry.put(updated)
        return json_response(
            {
                "id": provider_id,
                "credentials_updated_at": iso(updated.credentials_updated_at),
                "status": updated.status,
            }
        )

    async def test_provider(self, provider_id: str) -> Response:
        """One live call to the upstream, see `_live_test`."""
        principal = await self._manager("configure_providers")
        self._configured(principal, provider_id)
        return json_response(await _live_test(self.state, principal, provider_id))

    async def disable(self, provider_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = await self._set_status(principal, provider_id, "disable")
        return json_response(
            {"id": provider_id, "status": record.status, "disabled_at": iso(record.disabled_at)}
        )

    async def enable(self, provider_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = await self._set_status(principal, provider_id, "enable")
        return json_response(
            {"id": provider_id, "status": record.status, "enabled_at": iso(record.updated_at)}
        )

    async def delete(self, provider_id: str) -> Response:
        """Forget the configuration, the live registry entry and the health figures."""
        principal = await self._manager("configure_providers")
        self._configured(principal, provider_id)
        ws = principal.workspace_id
        event = _event(principal, "provider.deleted", provider_id)
        await audited(self.state, event, lambda d: provider_store.delete(d, ws, provider_id))
        self.state.registry.remove(ws, provider_id)
        self.state.health.forget(ws, provider_id)
        return json_response(
            {"id": provider_id, "deleted": True, "status": "inactive", "configured": False}
        )

    # -- helpers -----------------------------------------------------------------------------

    async def _manager(self, action: Action) -> Principal:
        """The authenticated caller, whose role allows `action`, in its workspace."""
        return await self.state.auth.manager(action)

    def _known(self, provider_id: str) -> ProviderInfo:
        """The catalog entry of a provider; 404 listing the known ones otherwise."""
        info = self.state.catalog.provider(provider_id)
        if info is None:
            raise not_found(
                "provider_not_found",
                f"Unknown provider '{provider_id}'.",
                available_providers=[p.id for p in self.state.catalog.providers()],
            )
        return info

    def _model_names(self, provider_id: str) -> frozenset[str]:
        """The ids and aliases of the provider's catalog models (its `default_model`s)."""
        return frozenset(
            name
            for model in self.state.catalog.models_of(provider_id)
            for name in (model.id, *model.aliases)
        )

    def _configured(self, principal: Principal, provider_id: str) -> ProviderRecord:
        """The record of a known provider configured in the caller's workspace, else 404."""
        self._known(provider_id)
        entry = self.state.registry.get(principal.workspace_id, provider_id)
        if entry is None:
            raise not_found(
                "provider_not_found", f"The provider '{provider_id}' is not configured."
            )
        return entry.record

    async def _set_status(
        self, principal: Principal, provider_id: str, trigger: str
    ) -> ProviderRecord:
        """Apply an enable/disable trigger through the provider state machine."""
        record = self._configured(principal, provider_id)
        status = next_status(record.status, trigger)
        now = datetime.now(UTC)
        ws = principal.workspace_id
        event = _event(principal, f"provider.{trigger}d", provider_id)
        updated = await _write(
            self.state,
            event,
            lambda d: provider_store.set_status(d, ws, provider_id, status, now),  # type: ignore[arg-type]
        )
        assert updated is not None
        self.state.registry.put(updated)
        return updated


async def check_base_url_address(state: AppState, given: Any) -> None:
    """A `settings.base_url` this request sets must lead where the operator's address
    policy lets providers go (`providers.upstream.guard`): a 400 `unsafe_base_url` naming
    it otherwise. A name that does not resolve yet is accepted; every connection is
    checked again when it opens."""
    url = given.get("base_url") if isinstance(given, dict) else None
    if url is None:
        return
    settings = state.settings
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


def summary(state: AppState, principal: Principal, info: ProviderInfo) -> dict[str, Any]:
    entry = state.registry.get(principal.workspace_id, info.id)
    record = entry.record if entry is not None else None
    return {
        "id": info.id,
        "name": info.name,
        "status": record.status if record else "inactive",
        "configured": record is not None,
        "configured_at": iso(record.configured_at) if record else None,
        "models": [m.id for m in state.catalog.models_of(info.id)],
        "health": _health_object(state, principal, info.id, None) if record else None,
    }


async def detail(state: AppState, principal: Principal, info: ProviderInfo) -> dict[str, Any]:
    entry = state.registry.get(principal.workspace_id, info.id)
    record = entry.record if entry is not None else None
    ws = principal.workspace_id
    await state.usage.flush()
    now = datetime.now(UTC)
    today = await state.db.run(
        lambda d: usage.totals_since(d, since=start_of_day(now), workspace_id=ws, provider=info.id)
    )
    uptime = await state.db.run(
        lambda d: usage.success_rate_since(
            d, workspace_id=ws, provider=info.id, since=now - timedelta(days=30)
        )
    )
    active = entry is not None and entry.active
    return summary(state, principal, info) | {
        "settings": dict(record.settings) if record else {},
        "credentials_updated_at": iso(record.credentials_updated_at) if record else None,
        "disabled_at": iso(record.disabled_at) if record else None,
        "capabilities": list(info.capabilities),
        "models": [
            {"id": m.id, "type": m.type, "available": active and m.status != "deprecated"}
            for m in state.catalog.models_of(info.id)
        ],
        "health": _health_object(state, principal, info.id, uptime) if record else None,
        "usage": {
            "requests_today": today.requests,
            "tokens_today": today.tokens,
            "cost_today_usd": round_cost(today.cost_usd),
        },
    }


def _health_object(
    state: AppState, principal: Principal, provider_id: str, uptime: float | None
) -> dict[str, Any]:
    figures = state.health.figures(principal.workspace_id, provider_id)
    error = (
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


def _health_entry(state: AppState, principal: Principal, provider_id: str) -> dict[str, Any]:
    figures = state.health.figures(principal.workspace_id, provider_id)
    entry = state.registry.get(principal.workspace_id, provider_id)
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


async def _live_test(state: AppState, principal: Principal, provider_id: str) -> dict[str, Any]:
    """One real call to the upstream (its model list), timed, under a deadline."""
    ws = principal.workspace_id
    adapter = state.registry.adapter(ws, provider_id)
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
        models = [m.id for m in state.catalog.models_of(provider_id)]
    except (ProviderError, trio.TooSlowError) as exc:
        latency = int((time.perf_counter() - started) * 1000)
        state.health.record(
            ws, provider_id, ok=False, latency_ms=latency, error_type=type(exc).__name__
        )
        message = exc.message if isinstance(exc, ProviderError) else "no answer in time"
        return _test_failure(provider_id, tested_at, latency, type(exc).__name__, message)
    latency = int((time.perf_counter() - started) * 1000)
    state.health.record(ws, provider_id, ok=True, latency_ms=latency)
    return {
        "id": provider_id,
        "test_result": "success",
        "latency_ms": latency,
        "models_available": models,
        "tested_at": tested_at,
    }


def _test_failure(
    provider_id: str, tested_at: str | None, latency: int | None, error_type: str, message: str
) -> dict[str, Any]:
    """The answer of a live test that failed (or could not be made)."""
    return {
        "id": provider_id,
        "test_result": "failure",
        "latency_ms": latency,
        "models_available": [],
        "tested_at": tested_at,
        "error": {"type": error_type, "message": message},
    }


def _credential_fields(body: dict[str, Any]) -> Any:
    """The spec sends the credential fields at the top (`{"api_key": ...}`); the shape
    `configure` takes (`{"credentials": {...}}`) is accepted too, since a client that
    just configured the provider naturally sends it again."""
    if set(body) == {"credentials"} and isinstance(body["credentials"], dict):
        return body["credentials"]
    return body


def _event(principal: Principal, kind: str, provider_id: str) -> AuditEvent:
    return audit_event(principal, kind, target_type="provider", target_id=provider_id)


async def _write(
    state: AppState,
    event: AuditEvent | None,
    change: Callable[[sqlite_utils.Database], ProviderRecord | None],
) -> ProviderRecord | None:
    """A store write, with its audit event in the same transaction when there is one."""
    if event is None:
        return await state.db.run(change)
    return await audited(state, event, change)
