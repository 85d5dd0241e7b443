"""The providers each workspace has configured, with a live adapter for each active one.

Filled from the store at start and kept in step by the management API. Credentials are
decrypted only here, into the adapter's endpoint; they never appear in a response or log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from providers.adapters import ADAPTER_CLASSES, build_adapter
from providers.base import Provider, ProviderEndpoint
from providers.catalog import Catalog
from providers.upstream import Upstream
from store.providers import ProviderRecord
from store.secrets import CredentialCipher


@attrs.frozen
class ConfiguredProvider:
    record: ProviderRecord
    adapter: Provider | None  # None unless the provider is active and has an adapter

    @property
    def active(self) -> bool:
        return self.record.status == "active" and self.adapter is not None


@attrs.define
class ProviderRegistry:
    client: Upstream
    cipher: CredentialCipher
    catalog: Catalog
    _by_workspace: dict[str, dict[str, ConfiguredProvider]] = attrs.field(factory=dict)
    # Active provider ids per workspace, read on every request; rebuilt on each change.
    _active: dict[str, tuple[frozenset[str], frozenset[str]]] = attrs.field(factory=dict)
    # Providers every workspace has without configuring them (the offline `local`
    # engines): `adapter` answers with them, `active_ids` (what routing offers) does not,
    # so only the families that append them on purpose (audio) call them. A workspace
    # turns one off by configuring it with status `disabled`.
    builtin: Mapping[str, Provider] = attrs.field(factory=dict)
    # Told the workspace after a change made here (`put`, `remove`), so that the other
    # processes re-read it from the store (`gateway.workers.store_events`, `apply`).
    on_change: Callable[[str], None] | None = None

    def load(self, records: list[ProviderRecord]) -> None:
        self._by_workspace.clear()
        self._active.clear()
        for record in records:
            self._put(record)

    def apply(self, workspace_id: str, records: list[ProviderRecord]) -> None:
        """The workspace's providers as the store has them (another process changed
        them): replaces what is here, without announcing it again."""
        self._by_workspace.pop(workspace_id, None)
        self._active.pop(workspace_id, None)
        for record in records:
            self._put(record)

    def put(self, record: ProviderRecord, *, announce: bool = True) -> ConfiguredProvider:
        """Record a (re)configuration; builds a fresh adapter for an active provider.
        `announce=False` for a node's own start-up configuration (its environment or
        `--demo`), which is not another node's business."""
        entry = self._put(record)
        if announce:
            self._changed(record.workspace_id)
        return entry

    def _put(self, record: ProviderRecord) -> ConfiguredProvider:
        entry = ConfiguredProvider(record, self._adapter_for(record))
        self._by_workspace.setdefault(record.workspace_id, {})[record.provider_id] = entry
        self._active.pop(record.workspace_id, None)
        return entry

    def remove(self, workspace_id: str, provider_id: str) -> None:
        self._by_workspace.get(workspace_id, {}).pop(provider_id, None)
        self._active.pop(workspace_id, None)
        self._changed(workspace_id)

    def _changed(self, workspace_id: str) -> None:
        if self.on_change is not None:
            self.on_change(workspace_id)

    def configured(self, workspace_id: str) -> Mapping[str, ConfiguredProvider]:
        return self._by_workspace.get(workspace_id, {})

    def get(self, workspace_id: str, provider_id: str) -> ConfiguredProvider | None:
        return self.configured(workspace_id).get(provider_id)

    def adapter(self, workspace_id: str, provider_id: str) -> Provider | None:
        """The adapter to call, or None when the provider is not active here."""
        entry = self.get(workspace_id, provider_id)
        if entry is None:
            return self.builtin.get(provider_id)
        return entry.adapter if entry.active else None

    def active_adapters(self) -> list[tuple[str, str, Provider]]:
        """(workspace, provider id, adapter) of every active provider, for the probes."""
        return [
            (workspace_id, provider_id, entry.adapter)
            for workspace_id, entries in self._by_workspace.items()
            for provider_id, entry in entries.items()
            if entry.active and entry.adapter is not None
        ]

    def active_ids(self, workspace_id: str) -> frozenset[str]:
        return self._sets(workspace_id)[0]

    def disabled_ids(self, workspace_id: str) -> frozenset[str]:
        """The providers configured here but switched off."""
        return self._sets(workspace_id)[1]

    def _sets(self, workspace_id: str) -> tuple[frozenset[str], frozenset[str]]:
        """The active and the disabled providers of a workspace, made once per change
        (every chat request plans over both)."""
        found = self._active.get(workspace_id)
        if found is None:
            configured = self.configured(workspace_id)
            active = frozenset(pid for pid, entry in configured.items() if entry.active)
            found = self._active[workspace_id] = (active, frozenset(configured) - active)
        return found

    def endpoint(self, record: ProviderRecord) -> ProviderEndpoint:
        """Where the provider lives: `settings.base_url`, else the vendor's public API."""
        credentials = self.cipher.decrypt(record.encrypted_credentials)
        info = self.catalog.provider(record.provider_id)
        default_url = info.base_url if info is not None else ""
        return ProviderEndpoint(
            provider_id=record.provider_id,
            base_url=str(record.settings.get("base_url") or default_url),
            api_key=str(credentials.get("api_key", "")),
            settings=dict(record.settings),
        )

    def _adapter_for(self, record: ProviderRecord) -> Provider | None:
        if record.status != "active" or record.provider_id not in ADAPTER_CLASSES:
            return None
        return build_adapter(self.client, self.endpoint(record))
