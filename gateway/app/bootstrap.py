"""What exists when the server starts: the operator's admin key and the providers.

Providers come from, in order: `--demo` (every vendor pointed at the in-process
simulator), else the vendors' usual environment variables (`OPENAI_API_KEY`, ...), with
an optional `<VENDOR>_BASE_URL`. Both configure the default workspace, idempotently, so
a restart with the same environment changes nothing: the credentials and the base URL
they name are set, while the settings and status the management API changed are kept
(a restart must not undo an acknowledged change).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import urlparse

from gateway.app.state import AppState
from providers.adapters import ADAPTER_CLASSES
from providers.catalog import ProviderInfo
from store import keys
from store import providers as provider_store
from store.keys import ALL_PERMISSIONS
from store.secrets import new_api_key
from store.workspaces import DEFAULT_WORKSPACE_ID as DEFAULT_WORKSPACE

STARTUP_ADMIN_NAME = "startup-admin"
SIM_CREDENTIAL = "sim-key"


async def ensure_admin_key(state: AppState, env_key: str | None) -> str | None:
    """Make the operator's admin key exist; returns a freshly made key to print, if any.

    With `GATEWAY_ADMIN_KEY` set, that key exists (idempotent) and nothing is printed.
    Without it, a new admin key is made for this run and the previous run's one is
    revoked: keys are never stored in clear, so this is the only way to show one.
    """
    if env_key:
        if not env_key.startswith("gw_admin_") or len(env_key) < 24:
            raise SystemExit("GATEWAY_ADMIN_KEY must be a 'gw_admin_...' key of 24+ characters")
        record = await state.db.run(
            lambda d: keys.ensure_bootstrap_admin(d, env_key, "bootstrap-admin")
        )
        if record.status == "active":
            state.keyring.put(record)
        return None
    full_key = new_api_key("admin")
    now = datetime.now(UTC)
    record = keys.new_record(
        full_key,
        workspace_id=DEFAULT_WORKSPACE,
        name=STARTUP_ADMIN_NAME,
        kind="admin",
        permissions=ALL_PERMISSIONS,
        now=now,
        role="owner",  # the organisation's owner: `gateway.platform.auth.reaches_organization`
    )

    def replace(d: object) -> list[str]:
        old = [
            k
            for k in keys.list_keys(d, DEFAULT_WORKSPACE)  # type: ignore[arg-type]
            if k.name == STARTUP_ADMIN_NAME and k.status == "active"
        ]
        for k in old:
            keys.revoke(d, k.id, now)  # type: ignore[arg-type]
        keys.insert(d, record)  # type: ignore[arg-type]
        return [k.key_hash for k in old]

    for key_hash in await state.db.run(replace):
        state.keyring.forget(key_hash)
    state.keyring.put(record)
    return full_key


def sim_base_url(sim_root: str, info: ProviderInfo) -> str:
    """The simulator's address for a vendor, with the path its public API root has
    (e.g. OpenAI's `/v1`), so adapters build the same paths against both."""
    return sim_root + urlparse(info.base_url).path.rstrip("/")


async def configure_demo_providers(state: AppState, sim_url_of: Mapping[str, str]) -> list[str]:
    """Point every vendor with an adapter at the simulator; returns their ids."""
    configured = []
    for info in state.catalog.providers():
        if info.id not in ADAPTER_CLASSES or info.id not in sim_url_of:
            continue
        base_url = sim_base_url(sim_url_of[info.id], info)
        await _configure_at_start(
            state, info.id, {"api_key": SIM_CREDENTIAL}, {"base_url": base_url}
        )
        configured.append(info.id)
    return configured


async def configure_env_providers(state: AppState, env: Mapping[str, str]) -> list[str]:
    """Configure each vendor whose usual key variable is set; returns their ids."""
    configured = []
    for info in state.catalog.providers():
        api_key = next((env[name] for name in info.api_key_env if env.get(name)), None)
        if api_key is None:
            continue
        settings = {}
        base_url = env.get(f"{info.id.upper()}_BASE_URL")
        if base_url:
            settings["base_url"] = base_url
        await _configure_at_start(state, info.id, {"api_key": api_key}, settings)
        configured.append(info.id)
    return configured


async def _configure_at_start(
    state: AppState, provider_id: str, credentials: dict[str, str], settings: dict[str, str]
) -> None:
    """Set the credentials and `settings`, keeping what the management API changed."""
    encrypted = state.cipher.encrypt(credentials)
    now = datetime.now(UTC)
    record = await state.db.run(
        lambda d: provider_store.refresh_configuration(
            d,
            workspace_id=DEFAULT_WORKSPACE,
            provider_id=provider_id,
            encrypted_credentials=encrypted,
            settings=settings,
            at=now,
        )
    )
    # The node's own start-up configuration: not announced to the other nodes (each
    # applies its own environment; `--demo` points at each node's own simulator).
    state.registry.put(record, announce=False)
