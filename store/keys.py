"""API keys: records, their row form, and the queries the gateway needs.

Only the SHA-256 of a key and a hint (prefix, last four) are stored; the clear key exists
only in the creation response. Functions are synchronous and take the sqlite-utils
database, so the gateway calls them through `Database.run`, e.g.
`await db.run(lambda d: keys.get(d, key_id, workspace_id=ws))`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, cast

import attrs

from store import columns
from store.handle import Handle
from store.secrets import KeyKind, hash_key, key_hint
from store.workspaces import DEFAULT_ORGANIZATION_ID, DEFAULT_WORKSPACE_ID

KeyStatus = Literal["active", "revoked"]
ALL_PERMISSIONS: tuple[str, ...] = (
    "chat",
    "embeddings",
    "audio",
    "files",
    "models",
    "management",
    "admin",
)
_IMMUTABLE_FIELDS = frozenset(
    {
        "id",
        "workspace_id",
        "kind",
        "prefix",
        "key_hash",
        "last_four",
        "created_at",
        "rotated_from",
        "organization_id",
        "role",
        "scope",
        "service_account_id",
        "agent_id",
    }
)


@attrs.frozen
class RateLimits:
    """Per-key limits; None means "no key-specific limit" (the plan default applies).

    `daily_requests` and `monthly_requests` count requests per UTC day and month. Records
    stored before a field existed read it as None.
    """

    rpm: int | None = None
    tpm: int | None = None
    daily_requests: int | None = None
    concurrent: int | None = None
    monthly_requests: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return attrs.asdict(self)


def coerce_rate_limits(value: RateLimits | Mapping[str, int | None]) -> RateLimits:
    """Accept a RateLimits or a mapping with any of its field names (e.g. a request body)."""
    if isinstance(value, RateLimits):
        return value
    unknown = set(value) - {f.name for f in attrs.fields(RateLimits)}
    if unknown:
        raise ValueError(f"unknown rate limit fields: {sorted(unknown)}")
    return RateLimits(**value)


@attrs.frozen(kw_only=True)
class ApiKeyRecord:
    """One stored API key. Times are aware UTC datetimes."""

    id: str
    workspace_id: str
    name: str
    kind: KeyKind
    prefix: str
    key_hash: str
    last_four: str
    status: KeyStatus
    permissions: tuple[str, ...] = attrs.field(converter=columns.str_tuple)
    rate_limits: RateLimits = attrs.field(factory=RateLimits, converter=coerce_rate_limits)
    allowed_models: tuple[str, ...] = attrs.field(default=(), converter=columns.str_tuple)
    allowed_ips: tuple[str, ...] = attrs.field(default=(), converter=columns.str_tuple)
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    rotated_from: str | None = None
    # Resolved from the workspace when the key is read, so the key ring knows it per key.
    organization_id: str = DEFAULT_ORGANIZATION_ID
    # A service account's key: its role and the workspaces it may act in (home first).
    role: str | None = None
    scope: tuple[str, ...] = attrs.field(default=(), converter=columns.str_tuple)
    service_account_id: str | None = None
    # An agent's key (gateway.agents): its limits and suspension apply on top of the key's.
    agent_id: str | None = None


def new_key_id() -> str:
    return columns.new_id("key_")


def new_record(
    full_key: str,
    *,
    workspace_id: str,
    name: str,
    kind: KeyKind,
    permissions: tuple[str, ...] | list[str],
    now: datetime,
    rate_limits: RateLimits | Mapping[str, int | None] | None = None,
    allowed_models: tuple[str, ...] | list[str] = (),
    allowed_ips: tuple[str, ...] | list[str] = (),
    expires_at: datetime | None = None,
    rotated_from: str | None = None,
    organization_id: str = DEFAULT_ORGANIZATION_ID,
    role: str | None = None,
    scope: tuple[str, ...] = (),
    service_account_id: str | None = None,
    agent_id: str | None = None,
) -> ApiKeyRecord:
    """An active record for a freshly generated key (hash and hint derived here, pure)."""
    hint = key_hint(full_key)
    return ApiKeyRecord(
        id=new_key_id(),
        workspace_id=workspace_id,
        name=name,
        kind=kind,
        prefix=hint.prefix,
        key_hash=hash_key(full_key),
        last_four=hint.last_four,
        status="active",
        permissions=permissions,
        rate_limits=RateLimits() if rate_limits is None else rate_limits,
        allowed_models=allowed_models,
        allowed_ips=allowed_ips,
        created_at=now,
        updated_at=now,
        expires_at=expires_at,
        rotated_from=rotated_from,
        organization_id=organization_id,
        role=role,
        scope=scope,
        service_account_id=service_account_id,
        agent_id=agent_id,
    )


def _to_row(record: ApiKeyRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "workspace_id": record.workspace_id,
        "name": record.name,
        "kind": record.kind,
        "prefix": record.prefix,
        "key_hash": record.key_hash,
        "last_four": record.last_four,
        "status": record.status,
        "permissions": columns.to_json(record.permissions),
        "rate_limits": columns.to_json(record.rate_limits.to_dict()),
        "allowed_models": columns.to_json(record.allowed_models),
        "allowed_ips": columns.to_json(record.allowed_ips),
        "created_at": columns.to_iso(record.created_at),
        "updated_at": columns.to_iso(record.updated_at),
        "last_used_at": columns.to_iso_or_none(record.last_used_at),
        "expires_at": columns.to_iso_or_none(record.expires_at),
        "revoked_at": columns.to_iso_or_none(record.revoked_at),
        "rotated_from": record.rotated_from,
        "role": record.role,
        "scope": columns.to_json(record.scope),
        "service_account_id": record.service_account_id,
        "agent_id": record.agent_id,
    }


def _from_row(row: Mapping[str, Any]) -> ApiKeyRecord:
    return ApiKeyRecord(
        id=row["id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        kind=cast(KeyKind, row["kind"]),
        prefix=row["prefix"],
        key_hash=row["key_hash"],
        last_four=row["last_four"],
        status=cast(KeyStatus, row["status"]),
        permissions=columns.json_strings(row["permissions"]),
        rate_limits=coerce_rate_limits(columns.json_object(row["rate_limits"])),
        allowed_models=columns.json_strings(row["allowed_models"]),
        allowed_ips=columns.json_strings(row["allowed_ips"]),
        created_at=columns.from_iso(row["created_at"]),
        updated_at=columns.from_iso(row["updated_at"]),
        last_used_at=columns.from_iso_or_none(row["last_used_at"]),
        expires_at=columns.from_iso_or_none(row["expires_at"]),
        revoked_at=columns.from_iso_or_none(row["revoked_at"]),
        rotated_from=row["rotated_from"],
        organization_id=row["organization_id"],
        role=row["role"],
        scope=columns.json_strings(row["scope"]),
        service_account_id=row["service_account_id"],
        agent_id=row.get("agent_id"),  # absent before migration 11
    )


def _select(db: Handle, where: str, params: list[Any]) -> list[ApiKeyRecord]:
    rows = db.query(
        "SELECT k.*, w.organization_id FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id "
        f"WHERE {where} ORDER BY k.created_at, k.id",
        params,
    )
    return [_from_row(row) for row in rows]


def insert(db: Handle, record: ApiKeyRecord) -> None:
    """Store a new key. Raises sqlite3.IntegrityError on a duplicate id or hash."""
    columns.insert_row(db, "api_keys", _to_row(record))


def insert_returning(db: Handle, record: ApiKeyRecord) -> ApiKeyRecord:
    """`insert`, returning the record (for callers that compose store writes)."""
    insert(db, record)
    return record


def get(
    db: Handle,
    key_id: str,
    workspace_id: str | None = None,
    *,
    agents: bool = True,
) -> ApiKeyRecord | None:
    """The key with this id; with `workspace_id`, only if it belongs to that workspace;
    with `agents=False`, not an agent's key (those are managed through their agent)."""
    agent_filter = "" if agents else " AND k.agent_id IS NULL"
    if workspace_id is None:
        found = _select(db, "k.id = ?" + agent_filter, [key_id])
    else:
        found = _select(
            db, "k.id = ? AND k.workspace_id = ?" + agent_filter, [key_id, workspace_id]
        )
    return found[0] if found else None


def find_by_hash(db: Handle, key_hash: str) -> ApiKeyRecord | None:
    """The key stored under this SHA-256 hex digest, whatever its status."""
    found = _select(db, "k.key_hash = ?", [key_hash])
    return found[0] if found else None


def list_keys(db: Handle, workspace_id: str, *, agents: bool = True) -> list[ApiKeyRecord]:
    """Every key of a workspace (revoked ones included), oldest first; with
    `agents=False`, without agents' keys."""
    where = "k.workspace_id = ?" + ("" if agents else " AND k.agent_id IS NULL")
    return _select(db, where, [workspace_id])


def active_in_organization(db: Handle, organization_id: str) -> list[ApiKeyRecord]:
    """The organisation's active keys, agents' keys left out (expiry is the caller's to
    judge)."""
    where = "w.organization_id = ? AND k.status = 'active' AND k.agent_id IS NULL"
    return _select(db, where, [organization_id])


def all_active(db: Handle) -> list[ApiKeyRecord]:
    """Every active key of every workspace, to fill the gateway's in-memory key map.

    Expired keys are included: checking `expires_at` is the caller's job, at request time.
    """
    return _select(db, "k.status = 'active'", [])


def update(db: Handle, key_id: str, **fields: Any) -> ApiKeyRecord | None:
    """Change some fields of a key and return the new record (None if no such key).

    Accepts any ApiKeyRecord field except identity and provenance fields (id, workspace,
    kind, prefix, hash, last four, created_at, rotated_from). `updated_at` is set to now
    unless given.
    """
    frozen = _IMMUTABLE_FIELDS.intersection(fields)
    if frozen:
        raise ValueError(f"fields cannot be updated: {sorted(frozen)}")
    fields.setdefault("updated_at", datetime.now(UTC))
    with db.atomic():
        current = get(db, key_id)
        if current is None:
            return None
        changed = attrs.evolve(current, **fields)
        row = _to_row(changed)
        assignments = ", ".join(f"{name} = :{name}" for name in row if name != "id")
        db.execute(f"UPDATE api_keys SET {assignments} WHERE id = :id", row)
    return changed


def revoke(db: Handle, key_id: str, at: datetime) -> ApiKeyRecord | None:
    """Mark a key revoked at `at` (None if no such key). Revoking twice keeps the first time."""
    with db.atomic():
        current = get(db, key_id)
        if current is None or current.status == "revoked":
            return current
        return update(db, key_id, status="revoked", revoked_at=at, updated_at=at)


def set_expiry(db: Handle, key_id: str, expires_at: datetime | None) -> ApiKeyRecord | None:
    """Set or clear a key's expiry, e.g. the grace period of a rotated key."""
    return update(db, key_id, expires_at=expires_at)


def rotate(
    db: Handle,
    old_key_id: str,
    replacement: ApiKeyRecord,
    old_expires_at: datetime,
) -> ApiKeyRecord | None:
    """Store `replacement` and give the old key its grace-period expiry, in one transaction.

    `replacement` is built by the caller (`new_record(..., rotated_from=old_key_id)`).
    Returns the old key as updated, or None (and stores nothing) if it does not exist.
    """
    with db.atomic():
        if get(db, old_key_id) is None:
            return None
        insert(db, replacement)
        return update(db, old_key_id, expires_at=old_expires_at, updated_at=replacement.created_at)


def delete(db: Handle, key_id: str) -> bool:
    """Remove a key; True if it existed. Its usage records stay (history)."""
    cursor = db.execute("DELETE FROM api_keys WHERE id = ?", [key_id])
    return cursor.rowcount > 0


def touch_last_used(db: Handle, last_used: Mapping[str, datetime]) -> None:
    """Record last-use times for many keys in one transaction; never moves a time backwards.

    The gateway batches these in memory rather than writing on every request.
    """
    params = [{"id": key_id, "at": columns.to_iso(moment)} for key_id, moment in last_used.items()]
    with db.atomic():
        db.conn.executemany(
            "UPDATE api_keys SET last_used_at = :at "
            "WHERE id = :id AND (last_used_at IS NULL OR last_used_at < :at)",
            params,
        )


def ensure_bootstrap_admin(
    db: Handle,
    full_key: str,
    name: str,
    now: datetime | None = None,
) -> ApiKeyRecord:
    """Make sure the operator's admin key exists; idempotent across restarts.

    If a key with this hash is stored (whatever its state: a revoked bootstrap key stays
    revoked), it is returned as it is, marked as its organisation's owner (the role such
    keys hold since they reach every workspace) if it was stored before; otherwise an
    active admin key with every permission is created in the default workspace.
    """
    with db.atomic():
        existing = find_by_hash(db, hash_key(full_key))
        if existing is not None and existing.role is None and existing.service_account_id is None:
            db.execute("UPDATE api_keys SET role = 'owner' WHERE id = ?", [existing.id])
            return attrs.evolve(existing, role="owner")
        if existing is not None:
            return existing
        record = new_record(
            full_key,
            workspace_id=DEFAULT_WORKSPACE_ID,
            name=name,
            kind="admin",
            permissions=ALL_PERMISSIONS,
            now=now or datetime.now(UTC),
            role="owner",
        )
        insert(db, record)
    return record
