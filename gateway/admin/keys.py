"""Management of API keys: list, create, read, patch, rotate, revoke, delete.

Every call is scoped to the caller's workspace: a key id from another workspace is
answered exactly like an unknown one (404). Changes reach the in-memory key ring before
the response is sent, so a revoked key stops working at once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import sqlite_utils
from quart import Blueprint, Response, request

from gateway.admin import key_render as render
from gateway.admin.key_input import (
    KeyChange,
    NewKey,
    Rotation,
    parse_change,
    parse_create,
    parse_grace_hours,
)
from gateway.admin.key_render import key_to_api
from gateway.admin.services import AdminServices
from gateway.platform import owners
from gateway.platform.answers import Deleted, ListOf, listing
from gateway.platform.apidoc import operation
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, not_found, permission_denied
from gateway.platform.roles import Action
from gateway.platform.web import iso, json_response, read_object
from providers.catalog import round_cost
from store import keys, usage
from store.audit import AuditEvent
from store.keys import ApiKeyRecord
from store.secrets import new_api_key


def start_of_day(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


KEYS = "/v1/management/api-keys"
TAG = "api-keys"
KEY_NOT_FOUND = {404: "key_not_found"}
# A change that would leave the organisation with no owner-level credential.
LAST_OWNER = {409: owners.LAST_OWNER_CREDENTIAL}


def keys_blueprint(admin: AdminServices) -> Blueprint:
    """The key-management routes, bound to one app's admin."""
    api = KeysApi(admin)
    bp = Blueprint("api_keys", __name__)
    bp.add_url_rule(KEYS, "list_keys", api.list_keys, methods=["GET"])
    bp.add_url_rule(KEYS, "create_key", api.create_key, methods=["POST"])
    bp.add_url_rule(f"{KEYS}/<key_id>", "read_key", api.read_key, methods=["GET"])
    bp.add_url_rule(f"{KEYS}/<key_id>", "patch_key", api.patch_key, methods=["PATCH"])
    bp.add_url_rule(f"{KEYS}/<key_id>/rotate", "rotate_key", api.rotate_key, methods=["POST"])
    bp.add_url_rule(f"{KEYS}/<key_id>/revoke", "revoke_key", api.revoke_key, methods=["POST"])
    bp.add_url_rule(f"{KEYS}/<key_id>", "delete_key", api.delete_key, methods=["DELETE"])
    return bp


class KeysApi:
    """The handlers of the key-management routes; one method per route."""

    def __init__(self, admin: AdminServices) -> None:
        self.admin = admin

    def _shown(self, principal: Principal, record: ApiKeyRecord) -> render.ApiKey:
        """`key_to_api` with the latest use, including one the last-used worker has not
        written yet (it writes every few seconds), so a key read right after a request
        says it was used. The caller's own key is shown as stored: otherwise every read
        would change it (the read is itself a use), and two reads would never agree."""
        noted = self.admin.keyring.noted_use(record.id)
        fresher = noted is not None and (record.last_used_at is None or noted > record.last_used_at)
        if fresher and record.id != principal.key_id:
            record = attrs.evolve(record, last_used_at=noted)
        return key_to_api(record)

    @operation(
        "API keys of the workspace",
        TAG,
        answer=ListOf[render.ApiKey],
        permission="view_configuration",
    )
    async def list_keys(self) -> Response:
        principal = await self._manager("view_configuration")
        records = await self.admin.db.run(
            lambda d: keys.list_keys(d, principal.workspace_id, agents=False)
        )
        return json_response(listing([self._shown(principal, r) for r in records]))

    @operation(
        "Create a key; the full secret is in this answer only",
        TAG,
        body=NewKey,
        answer=render.NewApiKey,
        status=201,
        permission="create_api_keys",
        description="Only an owner (or a key holding `admin`) hands out `admin`.",
        errors={400: "invalid_expiry"},
    )
    async def create_key(self) -> Response:
        """Create a key; the full key is shown in this answer only."""
        principal = await self._manager("create_api_keys")
        now = datetime.now(UTC)
        spec = parse_create(await read_object(), now)
        _check_grant(principal, spec.kind, spec.permissions)
        full_key = new_api_key(spec.kind)
        record = keys.new_record(
            full_key,
            workspace_id=principal.workspace_id,
            name=spec.name,
            kind=spec.kind,
            permissions=spec.permissions,
            now=now,
            rate_limits=spec.rate_limits,
            allowed_models=spec.allowed_models,
            allowed_ips=spec.allowed_ips,
            expires_at=spec.expires_at,
            organization_id=principal.organization_id,
        )
        event = _event(principal, "api_key.created", record)
        await audited(self.admin.db, event, lambda d: keys.insert_returning(d, record))
        self.admin.keyring.put(record)
        created: render.NewApiKey = {**key_to_api(record), "key": full_key}
        return json_response(created, 201)

    @operation(
        "One key, with today's usage",
        TAG,
        answer=render.ApiKeyRead,
        permission="view_configuration",
        errors=KEY_NOT_FOUND,
    )
    async def read_key(self, key_id: str) -> Response:
        """The key with its usage since the start of the (UTC) day."""
        principal = await self._manager("view_configuration")
        record = await self._find(principal, key_id)
        await self.admin.flush_usage()
        since = start_of_day(datetime.now(UTC))
        totals = await self.admin.db.run(
            lambda d: usage.totals_since(d, since=since, key_id=key_id)
        )
        body: render.ApiKeyRead = {
            **self._shown(principal, record),
            "usage": {
                "requests_today": totals.requests,
                "tokens_today": totals.tokens,
                "cost_today_usd": round_cost(totals.cost_usd),
            },
        }
        return json_response(body)

    @operation(
        "Change a key's name, limits, permissions, models, addresses or expiry",
        TAG,
        body=KeyChange,
        answer=render.KeyChanged,
        permission="create_api_keys",
        errors={**KEY_NOT_FOUND, 400: "invalid_expiry", **LAST_OWNER},
    )
    async def patch_key(self, key_id: str) -> Response:
        """Change some fields; the answer shows only the changed ones (and `updated_at`)."""
        principal = await self._manager("create_api_keys")
        record = await self._find_controlled(principal, key_id)
        changes = _patch_changes(principal, record, await read_object())
        event = _event(principal, "api_key.updated", record, sorted(changes))
        keeping = _keeping_an_owner(principal, record, changes, request.remote_addr)

        def change(d: sqlite_utils.Database) -> ApiKeyRecord | None:
            keeping(d)
            return keys.update(d, key_id, **changes)

        updated = await audited(self.admin.db, event, change)
        if updated is None:
            raise not_found("key_not_found", f"No API key '{key_id}' in this workspace.")
        if updated.status == "active":
            self.admin.keyring.put(updated)
        return json_response(render.changed(updated, list(changes)))

    @operation(
        "Issue a successor; the old key works for the grace period",
        TAG,
        body=Rotation,
        body_required=False,
        answer=render.Rotated,
        permission="create_api_keys",
        errors={**KEY_NOT_FOUND, 400: ("key_revoked", "key_expired", "key_rotated")},
    )
    async def rotate_key(self, key_id: str) -> Response:
        """Issue a successor key; the old one keeps working for the grace period."""
        principal = await self._manager("create_api_keys")
        old = await self._find_controlled(principal, key_id)
        grace = parse_grace_hours(await read_object(optional=True))
        now = datetime.now(UTC)
        await self._check_rotatable(old, now)
        expires = now + timedelta(hours=grace)
        if old.expires_at is not None:
            expires = min(expires, old.expires_at)
        full_key = new_api_key(old.kind)
        new = _successor(old, full_key, now)

        event = _event(principal, "api_key.created", new)
        old_updated = await audited(
            self.admin.db, event, lambda d: keys.rotate(d, old.id, new, expires)
        )
        self.admin.keyring.put(new)
        if old_updated is not None:
            self.admin.keyring.put(old_updated)
        rotated: render.Rotated = {
            "id": old.id,
            "new_key": full_key,
            "new_key_id": new.id,
            "old_key_expires_at": iso(expires),
            "rotated_at": iso(now),
        }
        return json_response(rotated)

    @operation(
        "Revoke a key at once",
        TAG,
        answer=render.Revoked,
        permission="revoke_api_keys",
        errors={**KEY_NOT_FOUND, **LAST_OWNER},
    )
    async def revoke_key(self, key_id: str) -> Response:
        principal = await self._manager("revoke_api_keys")
        found = await self._find_controlled(principal, key_id)
        now = datetime.now(UTC)
        event = _event(principal, "api_key.revoked", found)

        def revoke(d: sqlite_utils.Database) -> ApiKeyRecord | None:
            _keep_an_owner_without(d, found, "revoked")
            return keys.revoke(d, key_id, now)

        record = await audited(self.admin.db, event, revoke)
        if record is None:
            raise not_found("key_not_found", f"No API key '{key_id}' in this workspace.")
        self.admin.keyring.forget(record.key_hash)
        revoked: render.Revoked = {
            "id": record.id,
            "status": "revoked",
            "revoked_at": iso(now if record.revoked_at is None else record.revoked_at),
        }
        return json_response(revoked)

    @operation(
        "Delete a key",
        TAG,
        answer=Deleted,
        permission="revoke_api_keys",
        errors={**KEY_NOT_FOUND, **LAST_OWNER},
    )
    async def delete_key(self, key_id: str) -> Response:
        principal = await self._manager("revoke_api_keys")
        record = await self._find_controlled(principal, key_id)
        event = _event(principal, "api_key.deleted", record)

        def delete(d: sqlite_utils.Database) -> bool:
            _keep_an_owner_without(d, record, "deleted")
            return keys.delete(d, key_id)

        await audited(self.admin.db, event, delete)
        self.admin.keyring.forget(record.key_hash)
        return json_response({"id": key_id, "object": "api_key", "deleted": True})

    # -- helpers -----------------------------------------------------------------------------

    async def _manager(self, action: Action) -> Principal:
        """The authenticated caller, whose role allows `action`, in its workspace."""
        return await self.admin.auth.manager(action)

    async def _find(self, principal: Principal, key_id: str) -> ApiKeyRecord:
        record = await self.admin.db.run(
            lambda d: keys.get(d, key_id, principal.workspace_id, agents=False)
        )
        if record is None:
            raise not_found("key_not_found", f"No API key '{key_id}' in this workspace.")
        return record

    async def _find_controlled(self, principal: Principal, key_id: str) -> ApiKeyRecord:
        """A key the caller may change: changing one (a rotation hands out a working copy)
        is as powerful as creating it, so the same rule applies."""
        record = await self._find(principal, key_id)
        _check_grant(principal, record.kind, record.permissions)
        return record

    async def _check_rotatable(self, old: ApiKeyRecord, now: datetime) -> None:
        """Only a live key that has no successor yet can be rotated: the new key inherits
        the old one's expiry, which for an expired or already rotated key is (or is about
        to be) in the past, so the new key would die with it."""
        if old.status != "active":
            raise ApiError(400, "key_revoked", "A revoked key cannot be rotated.", param="key_id")
        if old.expires_at is not None and old.expires_at <= now:
            raise ApiError(400, "key_expired", "An expired key cannot be rotated.", param="key_id")
        siblings = await self.admin.db.run(lambda d: keys.list_keys(d, old.workspace_id))
        successor = next((k for k in siblings if k.rotated_from == old.id), None)
        if successor is not None:
            raise ApiError(
                400,
                "key_rotated",
                f"This key was already rotated; rotate its successor '{successor.id}'.",
                param="key_id",
            )


def _keep_an_owner_without(d: sqlite_utils.Database, record: ApiKeyRecord, done: str) -> None:
    """409 when `record` is its organisation's last owner-level credential."""
    now = datetime.now(UTC)
    if owners.owner_level(record, now):
        why = f"Key '{record.id}' would be {done}"
        owners.keep_an_owner(d, record.organization_id, after={record.id: None}, why=why, now=now)


def _keeping_an_owner(
    principal: Principal, record: ApiKeyRecord, changes: dict[str, Any], address: str | None
) -> Callable[[sqlite_utils.Database], None]:
    """The check a PATCH runs in its transaction: a key that is owner-level now and would
    not be after the change (its `admin` dropped, the caller's own key shutting out the
    caller's address, or an expiry set: it would lapse) must not be the organisation's
    last."""
    now = datetime.now(UTC)
    after = attrs.evolve(record, **changes)
    if not owners.owner_level(record, now):
        return lambda d: None
    if not owners.owner_level(after, now):
        why = f"This change takes the owner's powers ('admin') from key '{record.id}'"
    elif not owners.usable_by_caller(after, principal.key_id, address):
        why = f"Key '{record.id}' would no longer be usable from your address {address}"
    elif after.expires_at is not None and after.expires_at != record.expires_at:
        why = f"Key '{record.id}' would expire at {iso(after.expires_at)}"
    else:
        return lambda d: None
    org = record.organization_id
    return lambda d: owners.keep_an_owner(d, org, after={record.id: None}, why=why, now=now)


def _event(
    principal: Principal, kind: str, record: ApiKeyRecord, changed: list[str] | None = None
) -> AuditEvent:
    details: dict[str, Any] = {"name": record.name, "prefix": record.prefix}
    if changed is not None:
        details["changed"] = changed
    return audit_event(principal, kind, target_type="api_key", target_id=record.id, details=details)


def _successor(old: ApiKeyRecord, full_key: str, now: datetime) -> ApiKeyRecord:
    """The record of a rotation's new key: a copy of the old one's settings."""
    return keys.new_record(
        full_key,
        workspace_id=old.workspace_id,
        name=old.name,
        kind=old.kind,
        permissions=old.permissions,
        now=now,
        rate_limits=old.rate_limits,
        allowed_models=old.allowed_models,
        allowed_ips=old.allowed_ips,
        expires_at=old.expires_at,
        rotated_from=old.id,
        organization_id=old.organization_id,
        role=old.role,
        scope=old.scope,
        service_account_id=old.service_account_id,
    )


def _check_grant(principal: Principal, kind: str, permissions: tuple[str, ...]) -> None:
    """Only an owner (a person, or a key holding `admin`) hands out, or changes a key
    holding, `admin`. Below that the grant follows the role, as for a person: an admin
    (a `management` key included) hands out every other permission, so a management key
    can make the ordinary keys the spec's defaults describe (`chat`, `embeddings`, ...)."""
    if principal.has("admin") or principal.role == "owner":
        return
    if kind == "admin" or "admin" in permissions:
        raise permission_denied(
            "Only an owner (or a key holding 'admin') can grant 'admin' or change a key holding it."
        )


def _patch_changes(
    principal: Principal, record: ApiKeyRecord, body: dict[str, Any]
) -> dict[str, Any]:
    changes = parse_change(body, record.rate_limits, datetime.now(UTC))
    if "permissions" in changes:
        _check_grant(principal, record.kind, changes["permissions"])
    return changes
