"""Service accounts: a role within some workspaces, acting through one API key.

The key is made with the account (its clear text is in the creation answer only) and
carries the role and the workspace scope, so the key ring resolves them at load. Deleting
the account deletes its key and drops it from the ring before the answer (never the
organisation's last owner-level credential: `gateway.platform.owners`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlite_utils

from gateway.organization import input as parse
from gateway.organization import render, scope
from gateway.organization.members import (
    check_ceiling,
    checked_workspaces,
    organization_workspace_ids,
)
from gateway.organization.services import OrganizationServices
from gateway.platform import owners
from gateway.platform.answers import Deleted, ListOf, listing
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, not_found
from gateway.platform.roles import KEY_PERMISSIONS
from store import keys, service_accounts
from store.secrets import KeyKind, new_api_key
from store.service_accounts import ServiceAccountRecord


def account_not_found(account_id: str) -> ApiError:
    return not_found("service_account_not_found", f"No service account '{account_id}'.")


async def create(
    services: OrganizationServices, principal: Principal, body: dict[str, Any]
) -> render.NewServiceAccount:
    spec = parse.parse_service_account(body)
    check_ceiling(principal, spec.role)
    listed = await checked_workspaces(services, principal, spec.workspaces, spec.role)
    org = principal.organization_id
    if not listed:  # owners and admins with none listed: the whole organisation
        listed = tuple(await services.db.run(lambda d: organization_workspace_ids(d, org)))
    now = datetime.now(UTC)
    account = ServiceAccountRecord(
        organization_id=org, name=spec.name, role=spec.role, workspaces=listed, created_at=now
    )
    kind: KeyKind = "admin" if spec.role in ("owner", "admin") else "prod"
    full_key = new_api_key(kind)
    key = keys.new_record(
        full_key,
        workspace_id=listed[0],
        name=f"service account {spec.name}",
        kind=kind,
        permissions=KEY_PERMISSIONS[spec.role],
        now=now,
        organization_id=org,
        role=spec.role,
        scope=listed,
        service_account_id=account.id,
    )

    def store(d: sqlite_utils.Database) -> ServiceAccountRecord:
        service_accounts.insert(d, account)
        keys.insert(d, key)
        return account

    event = audit_event(
        principal,
        "service_account.created",
        target_type="service_account",
        target_id=account.id,
        details={"name": spec.name, "role": spec.role, "key_id": key.id},
        organization_wide=True,
    )
    await audited(services.db, event, store)
    services.keyring.put(key)
    return {**render.service_account(account), "api_key": full_key, "key_id": key.id}


async def list_accounts(
    services: OrganizationServices, principal: Principal
) -> ListOf[render.ServiceAccount]:
    org = principal.organization_id
    records, all_ws = await services.db.run(
        lambda d: (service_accounts.list_accounts(d, org), organization_workspace_ids(d, org))
    )
    shown = [
        render.service_account(r)
        for r in records
        if scope.visible(r.workspaces, principal.workspaces, all_ws)
    ]
    return listing(shown)


async def read(
    services: OrganizationServices, principal: Principal, account_id: str
) -> render.ServiceAccount:
    return render.service_account(await _find(services, principal, account_id))


async def delete(services: OrganizationServices, principal: Principal, account_id: str) -> Deleted:
    account = await _find(services, principal, account_id)
    check_ceiling(principal, account.role)
    event = audit_event(
        principal,
        "service_account.deleted",
        target_type="service_account",
        target_id=account_id,
        details={"name": account.name},
        organization_wide=True,
    )
    org = principal.organization_id

    def store(d: sqlite_utils.Database) -> tuple[str, list[str]]:
        if account.role == "owner":
            held = keys.active_in_organization(d, org)
            gone = {k.id: None for k in held if k.service_account_id == account_id}
            why = f"Service account '{account_id}' would be deleted with its key"
            owners.keep_an_owner(d, org, after=gone, why=why, now=datetime.now(UTC))
        return account_id, service_accounts.delete(d, account_id)

    _, hashes = await audited(services.db, event, store)
    for key_hash in hashes:
        services.keyring.forget(key_hash)
    return {"id": account_id, "object": "service_account", "deleted": True}


async def _find(
    services: OrganizationServices, principal: Principal, account_id: str
) -> ServiceAccountRecord:
    org = principal.organization_id
    found, all_ws = await services.db.run(
        lambda d: (service_accounts.get(d, account_id, org), organization_workspace_ids(d, org))
    )
    if found is None or not scope.visible(found.workspaces, principal.workspaces, all_ws):
        raise account_not_found(account_id)
    return found
