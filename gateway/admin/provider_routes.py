"""Management of providers: configure, list, read, settings, credentials, test,
enable/disable, delete, and live health. Thin: what each route does is in
`gateway.admin.providers`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import sqlite_utils
from quart import Blueprint, Response

from gateway.admin import provider_render as render
from gateway.admin.provider_input import (
    CredentialsUpdate,
    ProviderChange,
    ProviderConfiguration,
    next_status,
    parse_configuration,
    parse_credentials,
    parse_credentials_update,
    parse_settings,
)
from gateway.admin.providers import (
    check_base_url_address,
    configure_provider,
    detail,
    health_entry,
    live_test,
    provider_event,
    summary,
    write_record,
)
from gateway.admin.services import AdminServices
from gateway.platform.apidoc import operation
from gateway.platform.audit import audited
from gateway.platform.auth import Principal
from gateway.platform.errors import not_found
from gateway.platform.roles import Action
from gateway.platform.shapes import parse
from gateway.platform.web import iso, json_response, read_object
from providers.catalog import ProviderInfo
from store import providers as provider_store
from store.providers import ProviderRecord

PROVIDERS = "/v1/management/providers"
TAG = "providers"
NOT_FOUND = {404: "provider_not_found"}
SETTINGS_REFUSED = {400: ("invalid_configuration", "unsafe_base_url")}
INVALID_STATE = {409: "invalid_state"}
INVALID_CREDENTIALS = {422: "invalid_credentials"}


def providers_blueprint(admin: AdminServices) -> Blueprint:
    """The provider-management routes, bound to one app's admin."""
    api = ProvidersApi(admin)
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

    def __init__(self, admin: AdminServices) -> None:
        self.admin = admin

    @operation(
        "Every supported provider, configured or not",
        TAG,
        answer=render.ProviderList,
        permission="view_configuration",
    )
    async def list_providers(self) -> Response:
        principal = await self._manager("view_configuration")
        providers = [summary(self.admin, principal, p) for p in self.admin.catalog.providers()]
        answer: render.ProviderList = {"providers": providers}
        return json_response(answer)

    @operation(
        "Configure a provider with its credentials",
        TAG,
        body=ProviderConfiguration,
        answer=render.ConfiguredProvider,
        status=201,
        permission="configure_providers",
        errors={**NOT_FOUND, **SETTINGS_REFUSED, **INVALID_CREDENTIALS},
    )
    async def configure(self) -> Response:
        """Configure (or reconfigure) a catalog provider with its credentials and settings."""
        principal = await self._manager("configure_providers")
        body = await read_object()
        provider_id = parse_configuration(body).provider
        info = self._known(provider_id)
        credentials = parse_credentials(body["credentials"])
        settings = parse_settings(body.get("settings"), models=self._model_names(provider_id))
        await check_base_url_address(self.admin, body.get("settings"))
        event = provider_event(principal, "provider.configured", provider_id)
        record = await configure_provider(
            self.admin, principal.workspace_id, provider_id, credentials, settings, event
        )
        configured: render.ConfiguredProvider = {
            "id": provider_id,
            "name": info.name,
            "status": record.status,
            "configured": True,
            "configured_at": iso(record.configured_at),
            "models": [m.id for m in self.admin.catalog.models_of(provider_id)],
        }
        return json_response(configured, 201)

    @operation(
        "Live health figures of the configured providers",
        TAG,
        answer=render.ProvidersHealth,
        permission="view_configuration",
    )
    async def health(self) -> Response:
        """Live health figures of every provider configured in the caller's workspace."""
        principal = await self._manager("view_configuration")
        figures = {
            pid: health_entry(self.admin, principal, pid)
            for pid in self.admin.registry.configured(principal.workspace_id)
        }
        answer: render.ProvidersHealth = {"providers": figures}
        return json_response(answer)

    @operation(
        "One provider's detail",
        TAG,
        answer=render.ProviderDetail,
        permission="view_configuration",
        errors=NOT_FOUND,
    )
    async def read_provider(self, provider_id: str) -> Response:
        principal = await self._manager("view_configuration")
        info = self._known(provider_id)
        return json_response(await detail(self.admin, principal, info))

    @operation(
        "Merge new settings",
        TAG,
        body=ProviderChange,
        body_required=False,
        answer=render.ProviderDetail,
        permission="configure_providers",
        errors={**NOT_FOUND, **SETTINGS_REFUSED},
    )
    async def patch_provider(self, provider_id: str) -> Response:
        """Merge new settings into a configured provider's; answers with its detail."""
        principal = await self._manager("configure_providers")
        record = self._configured(principal, provider_id)
        body = await read_object(optional=True)
        parse(ProviderChange, body)
        settings = parse_settings(
            body.get("settings"), record.settings, models=self._model_names(provider_id)
        )
        await check_base_url_address(self.admin, body.get("settings"))
        now = datetime.now(UTC)
        ws = principal.workspace_id
        await self._change(
            principal,
            provider_id,
            "provider.updated",
            lambda d: provider_store.update_settings(d, ws, provider_id, settings, now),
        )
        return json_response(await detail(self.admin, principal, self._known(provider_id)))

    @operation(
        "Replace the credentials",
        TAG,
        body=CredentialsUpdate,
        answer=render.CredentialsUpdated,
        permission="configure_providers",
        description='The credential fields at the top (`{"api_key": ...}`), or nested as '
        'configure takes them (`{"credentials": {...}}`).',
        errors={**NOT_FOUND, **INVALID_STATE, **INVALID_CREDENTIALS},
    )
    async def update_credentials(self, provider_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = self._configured(principal, provider_id)
        next_status(record.status, "update_credentials")
        credentials = parse_credentials_update(await read_object())
        encrypted = self.admin.cipher.encrypt(credentials)
        now = datetime.now(UTC)
        ws = principal.workspace_id
        updated = await self._change(
            principal,
            provider_id,
            "provider.credentials_updated",
            lambda d: provider_store.update_credentials(d, ws, provider_id, encrypted, now),
        )
        answer: render.CredentialsUpdated = {
            "id": provider_id,
            "credentials_updated_at": iso(updated.credentials_updated_at),
            "status": updated.status,
        }
        return json_response(answer)

    @operation(
        "Call the provider now and report",
        TAG,
        body=None,
        answer=render.ProviderTest,
        permission="configure_providers",
        errors=NOT_FOUND,
    )
    async def test_provider(self, provider_id: str) -> Response:
        """One live call to the upstream, see `_live_test`."""
        principal = await self._manager("configure_providers")
        self._configured(principal, provider_id)
        return json_response(await live_test(self.admin, principal, provider_id))

    @operation(
        "Stop routing to the provider",
        TAG,
        body=None,
        answer=render.Disabled,
        permission="configure_providers",
        errors={**NOT_FOUND, **INVALID_STATE},
    )
    async def disable(self, provider_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = await self._set_status(principal, provider_id, "disable")
        answer: render.Disabled = {
            "id": provider_id,
            "status": record.status,
            "disabled_at": iso(record.disabled_at),
        }
        return json_response(answer)

    @operation(
        "Route to the provider again",
        TAG,
        body=None,
        answer=render.Enabled,
        permission="configure_providers",
        errors={**NOT_FOUND, **INVALID_STATE},
    )
    async def enable(self, provider_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = await self._set_status(principal, provider_id, "enable")
        answer: render.Enabled = {
            "id": provider_id,
            "status": record.status,
            "enabled_at": iso(record.updated_at),
        }
        return json_response(answer)

    @operation(
        "Forget the provider's configuration",
        TAG,
        answer=render.ProviderForgotten,
        permission="configure_providers",
        errors=NOT_FOUND,
    )
    async def delete(self, provider_id: str) -> Response:
        """Forget the configuration, the live registry entry and the health figures."""
        principal = await self._manager("configure_providers")
        self._configured(principal, provider_id)
        ws = principal.workspace_id
        event = provider_event(principal, "provider.deleted", provider_id)
        await audited(self.admin.db, event, lambda d: provider_store.delete(d, ws, provider_id))
        self.admin.registry.remove(ws, provider_id)
        self.admin.health.forget(ws, provider_id)
        answer: render.ProviderForgotten = {
            "id": provider_id,
            "deleted": True,
            "status": "inactive",
            "configured": False,
        }
        return json_response(answer)

    # -- helpers -----------------------------------------------------------------------------

    async def _manager(self, action: Action) -> Principal:
        """The authenticated caller, whose role allows `action`, in its workspace."""
        return await self.admin.auth.manager(action)

    def _known(self, provider_id: str) -> ProviderInfo:
        """The catalog entry of a provider; 404 listing the known ones otherwise."""
        info = self.admin.catalog.provider(provider_id)
        if info is None:
            raise not_found(
                "provider_not_found",
                f"Unknown provider '{provider_id}'.",
                available_providers=[p.id for p in self.admin.catalog.providers()],
            )
        return info

    def _model_names(self, provider_id: str) -> frozenset[str]:
        """The ids and aliases of the provider's catalog models (its `default_model`s)."""
        return frozenset(
            name
            for model in self.admin.catalog.models_of(provider_id)
            for name in (model.id, *model.aliases)
        )

    def _configured(self, principal: Principal, provider_id: str) -> ProviderRecord:
        """The record of a known provider configured in the caller's workspace, else 404."""
        self._known(provider_id)
        entry = self.admin.registry.get(principal.workspace_id, provider_id)
        if entry is None:
            raise not_found(
                "provider_not_found", f"The provider '{provider_id}' is not configured."
            )
        return entry.record

    async def _set_status(
        self, principal: Principal, provider_id: str, trigger: str
    ) -> ProviderRecord:
        """Apply an enable/disable trigger through the provider admin machine."""
        record = self._configured(principal, provider_id)
        status = next_status(record.status, trigger)
        now = datetime.now(UTC)
        ws = principal.workspace_id
        return await self._change(
            principal,
            provider_id,
            f"provider.{trigger}d",
            lambda d: provider_store.set_status(d, ws, provider_id, status, now),  # type: ignore[arg-type]
        )

    async def _change(
        self,
        principal: Principal,
        provider_id: str,
        action: str,
        change: Callable[[sqlite_utils.Database], ProviderRecord | None],
    ) -> ProviderRecord:
        """A configured provider's record changed, audited as `action` in the same
        transaction, and the registry given the new record."""
        event = provider_event(principal, action, provider_id)
        updated = await write_record(self.admin, event, change)
        assert updated is not None  # the caller found it configured
        self.admin.registry.put(updated)
        return updated
