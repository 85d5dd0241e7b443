"""Provider configurations, one per (workspace, provider id).

Credentials arrive here already encrypted (see `store.secrets.CredentialCipher`): this
module never sees them in clear, so no query or log line of the store can leak them.
Which state changes are allowed is decided by the gateway; these functions only record
them, setting the timestamps that go with each.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, cast

import attrs

from store import columns
from store.handle import Handle

ProviderStatus = Literal["active", "inactive", "disabled"]


@attrs.frozen(kw_only=True)
class ProviderRecord:
    """A workspace's configuration of one upstream provider."""

    workspace_id: str
    provider_id: str
    status: ProviderStatus
    encrypted_credentials: str = attrs.field(repr=False)
    settings: Mapping[str, Any] = attrs.field(factory=dict, converter=columns.plain_dict)
    configured_at: datetime
    credentials_updated_at: datetime | None = None
    disabled_at: datetime | None = None
    updated_at: datetime


def _to_row(record: ProviderRecord) -> dict[str, Any]:
    return {
        "workspace_id": record.workspace_id,
        "provider_id": record.provider_id,
        "status": record.status,
        "encrypted_credentials": record.encrypted_credentials,
        "settings": columns.to_json(record.settings),
        "configured_at": columns.to_iso(record.configured_at),
        "credentials_updated_at": columns.to_iso_or_none(record.credentials_updated_at),
        "disabled_at": columns.to_iso_or_none(record.disabled_at),
        "updated_at": columns.to_iso(record.updated_at),
    }


def _from_row(row: Mapping[str, Any]) -> ProviderRecord:
    return ProviderRecord(
        workspace_id=row["workspace_id"],
        provider_id=row["provider_id"],
        status=cast(ProviderStatus, row["status"]),
        encrypted_credentials=row["encrypted_credentials"],
        settings=columns.json_object(row["settings"]),
        configured_at=columns.from_iso(row["configured_at"]),
        credentials_updated_at=columns.from_iso_or_none(row["credentials_updated_at"]),
        disabled_at=columns.from_iso_or_none(row["disabled_at"]),
        updated_at=columns.from_iso(row["updated_at"]),
    )


def _write(db: Handle, record: ProviderRecord) -> ProviderRecord:
    row = _to_row(record)
    names = ", ".join(row)
    values = ", ".join(f":{name}" for name in row)
    changed = ", ".join(f"{name} = excluded.{name}" for name in row)
    db.execute(
        f"INSERT INTO providers ({names}) VALUES ({values}) "
        f"ON CONFLICT (workspace_id, provider_id) DO UPDATE SET {changed}",
        row,
    )
    return record


def get(db: Handle, workspace_id: str, provider_id: str) -> ProviderRecord | None:
    rows = list(
        db.query(
            "SELECT * FROM providers WHERE workspace_id = ? AND provider_id = ?",
            [workspace_id, provider_id],
        )
    )
    return _from_row(rows[0]) if rows else None


def list_for_workspace(db: Handle, workspace_id: str) -> list[ProviderRecord]:
    """The workspace's configured providers, by provider id."""
    rows = db.query(
        "SELECT * FROM providers WHERE workspace_id = ? ORDER BY provider_id", [workspace_id]
    )
    return [_from_row(row) for row in rows]


def list_all(db: Handle) -> list[ProviderRecord]:
    """Every workspace's configurations, to fill the gateway's registry at start."""
    rows = db.query("SELECT * FROM providers ORDER BY workspace_id, provider_id")
    return [_from_row(row) for row in rows]


def upsert_configuration(
    db: Handle,
    *,
    workspace_id: str,
    provider_id: str,
    encrypted_credentials: str,
    settings: Mapping[str, Any],
    at: datetime,
) -> ProviderRecord:
    """Configure a provider (or reconfigure it): it becomes active, `configured_at` = `at`.

    The credentials and settings given replace any stored before.
    """
    record = ProviderRecord(
        workspace_id=workspace_id,
        provider_id=provider_id,
        status="active",
        encrypted_credentials=encrypted_credentials,
        settings=settings,
        configured_at=at,
        credentials_updated_at=at,
        updated_at=at,
    )
    return _write(db, record)


def refresh_configuration(
    db: Handle,
    *,
    workspace_id: str,
    provider_id: str,
    encrypted_credentials: str,
    settings: Mapping[str, Any],
    at: datetime,
) -> ProviderRecord:
    """Configure a provider at start-up from the operator's environment.

    Unlike `upsert_configuration`, what the management API changed survives a restart:
    the credentials are replaced and `settings` is merged over the stored settings, but
    the other settings and the status (a disabled provider stays disabled) are kept. A
    provider not configured yet is configured afresh.
    """
    with db.atomic():
        current = get(db, workspace_id, provider_id)
        if current is None:
            return upsert_configuration(
                db,
                workspace_id=workspace_id,
                provider_id=provider_id,
                encrypted_credentials=encrypted_credentials,
                settings=settings,
                at=at,
            )
        refreshed = attrs.evolve(
            current,
            encrypted_credentials=encrypted_credentials,
            settings={**current.settings, **settings},
            credentials_updated_at=at,
            updated_at=at,
        )
        return _write(db, refreshed)


def _change(
    db: Handle, workspace_id: str, provider_id: str, **fields: Any
) -> ProviderRecord | None:
    with db.atomic():
        current = get(db, workspace_id, provider_id)
        if current is None:
            return None
        return _write(db, attrs.evolve(current, **fields))


def update_settings(
    db: Handle,
    workspace_id: str,
    provider_id: str,
    settings: Mapping[str, Any],
    at: datetime,
) -> ProviderRecord | None:
    """Replace the settings object (merging a PATCH body is the caller's decision)."""
    return _change(db, workspace_id, provider_id, settings=settings, updated_at=at)


def update_credentials(
    db: Handle,
    workspace_id: str,
    provider_id: str,
    encrypted_credentials: str,
    at: datetime,
) -> ProviderRecord | None:
    """Replace the credentials; sets `credentials_updated_at`. None if not configured."""
    return _change(
        db,
        workspace_id,
        provider_id,
        encrypted_credentials=encrypted_credentials,
        credentials_updated_at=at,
        updated_at=at,
    )


def set_status(
    db: Handle,
    workspace_id: str,
    provider_id: str,
    status: ProviderStatus,
    at: datetime,
) -> ProviderRecord | None:
    """Record a status change; `disabled_at` is `at` when disabling, cleared otherwise."""
    disabled_at = at if status == "disabled" else None
    return _change(
        db, workspace_id, provider_id, status=status, disabled_at=disabled_at, updated_at=at
    )


def delete(db: Handle, workspace_id: str, provider_id: str) -> bool:
    """Remove the configuration; True if there was one."""
    cursor = db.execute(
        "DELETE FROM providers WHERE workspace_id = ? AND provider_id = ?",
        [workspace_id, provider_id],
    )
    return cursor.rowcount > 0
