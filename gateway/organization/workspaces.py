"""Workspaces of an organisation: list, create, read, update, delete.

A caller sees the workspaces it may act in (owners and admins: all of the
organisation's; others and API keys: theirs). Deleting refuses while the workspace still
holds active keys, routing rules or provider configurations (409 `workspace_not_empty`,
with the counts), and refuses the organisation's last workspace: no credential or
configuration is removed as a side effect a caller did not see. The workspace's content
(files and data documents, with everything derived from them) is erased with it, through
`store.erasure`, so none of it stays on disk (a cascade alone left the text in free pages
and the WAL, the blobs on disk and the documents' full-text entries searchable).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import attrs
import sqlite_utils

from gateway.organization import input as parse
from gateway.organization import render
from gateway.organization.services import OrganizationServices
from gateway.platform.answers import Deleted, ListOf, listing
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal, reaches_organization
from gateway.platform.errors import ApiError, not_found, permission_denied
from store import audit, erasure, request_log, workspaces
from store.audit import AuditEvent
from store.erasure import Removal
from store.workspaces import WorkspaceRecord

UPDATABLE = ("name", "description", "request_log_bodies")


def workspace_not_found(workspace_id: str) -> ApiError:
    return not_found("workspace_not_found", f"No workspace '{workspace_id}'.")


async def list_workspaces(
    services: OrganizationServices, principal: Principal
) -> ListOf[render.Workspace]:
    org = principal.organization_id
    records = await services.db.run(lambda d: workspaces.list_workspaces(d, org))
    shown = [render.workspace(r) for r in records if r.id in principal.workspaces]
    return listing(shown)


async def create(
    services: OrganizationServices, principal: Principal, body: dict[str, Any]
) -> render.Workspace:
    _check_reaches_new_workspaces(principal)
    spec = parse.new_workspace(body)
    record = WorkspaceRecord(
        name=spec.name,
        description=spec.description or "",
        created_at=datetime.now(UTC),
        organization_id=principal.organization_id,
    )
    event = audit_event(
        principal,
        "workspace.created",
        target_type="workspace",
        target_id=record.id,
        details={"name": spec.name},
        organization_wide=True,
    )
    await audited(services.db, event, lambda d: workspaces.insert(d, record))
    return render.workspace(record)


def _check_reaches_new_workspaces(principal: Principal) -> None:
    """Never a 201 for a workspace the caller could not see: owner and admin members and
    keys acting as the organisation's owner reach every workspace, a new one included;
    a managing key of one workspace or a service account of listed workspaces would not."""
    if principal.kind == "user" or reaches_organization(principal.credential):
        return
    raise permission_denied(
        "A workspace made by this credential would be out of its reach: it acts only in "
        "its own (or its listed) workspaces. Create workspaces with an admin key, or as an "
        "owner or admin member."
    )


async def read(
    services: OrganizationServices, principal: Principal, workspace_id: str
) -> render.Workspace:
    return render.workspace(await _find(services, principal, workspace_id))


async def update(
    services: OrganizationServices, principal: Principal, workspace_id: str, body: dict[str, Any]
) -> render.Workspace:
    """Rename, describe, or turn the request log's bodies on or off: turning them off
    erases the bodies the log holds (`store.erasure`), in the change's transaction."""
    await _find(services, principal, workspace_id)
    asked = parse.workspace_change(body)
    name, description, bodies = asked.name, asked.description, asked.request_log_bodies
    changed = sorted(k for k in UPDATABLE if getattr(asked, k) is not None)
    event = audit_event(
        principal,
        "workspace.updated",
        target_type="workspace",
        target_id=workspace_id,
        details={"changed": changed},
        organization_wide=True,
    )

    def change(db: sqlite_utils.Database) -> WorkspaceRecord | None:
        updated = workspaces.update(db, workspace_id, name=name, description=description)
        if updated is None or bodies is None:
            return updated
        request_log.set_keeps_bodies(db, workspace_id, bodies)
        if not bodies:
            request_log.drop_bodies(db, workspace_id)
        return attrs.evolve(updated, request_log_bodies=bodies)

    if bodies is False:  # the bodies kept leave the disk, not only the table

        def remove(db: sqlite_utils.Database) -> Removal[WorkspaceRecord | None]:
            found = change(db)
            audit.append(db, event)
            return Removal(found)

        updated = await erasure.erase(services.db, remove)
    else:
        updated = await audited(services.db, event, change)
    if updated is None:
        raise workspace_not_found(workspace_id)
    if bodies is not None:
        services.bodies.set(workspace_id, bodies)
    return render.workspace(updated)


async def delete(
    services: OrganizationServices, principal: Principal, workspace_id: str
) -> Deleted:
    record = await _find(services, principal, workspace_id)
    held = await services.db.run(lambda d: workspaces.holdings(d, workspace_id))
    if held.api_keys or held.routing_rules or held.providers:
        raise ApiError(
            409,
            "workspace_not_empty",
            "This workspace still holds active API keys, routing rules or provider "
            "configurations; revoke or delete them first.",
            type="conflict_error",
            holds=attrs.asdict(held),
        )
    org = principal.organization_id
    siblings = await services.db.run(lambda d: workspaces.list_workspaces(d, org))
    if len(siblings) <= 1:
        raise ApiError(
            409,
            "last_workspace",
            "An organisation keeps at least one workspace.",
            type="conflict_error",
        )
    event = audit_event(
        principal,
        "workspace.deleted",
        target_type="workspace",
        target_id=workspace_id,
        details={"name": record.name},
        organization_wide=True,
    )
    await _erase(services, workspace_id, event)
    return {"id": workspace_id, "object": "workspace", "deleted": True}


async def _erase(services: OrganizationServices, workspace_id: str, event: AuditEvent) -> None:
    """The workspace gone with every kind of data the families keep in it
    (`store.erasure`; the root plugs the kinds in, `OrganizationServices.workspace_data`)."""
    kept = services.workspace_data

    def remove(db: sqlite_utils.Database) -> Removal[str]:
        blobs = [blob for data in kept for blob in data.remove_workspace(db, workspace_id)]
        workspaces.delete(db, workspace_id)
        audit.append(db, event)
        return Removal(workspace_id, tuple(blobs))

    async def forget(_: str) -> None:
        for data in kept:
            data.forget(workspace_id)

    for data in kept:
        data.drop_pending(workspace_id)
    async with AsyncExitStack() as locks:  # every kind's blob lock, as its deletions hold it
        for data in kept:
            await locks.enter_async_context(data.blob_lock)
        await erasure.erase(services.db, remove, forget=forget)


async def _find(
    services: OrganizationServices, principal: Principal, workspace_id: str
) -> WorkspaceRecord:
    """A workspace the caller may act in; any other id answers like an unknown one."""
    if workspace_id not in principal.workspaces:
        raise workspace_not_found(workspace_id)
    org = principal.organization_id
    record = await services.db.run(lambda d: workspaces.get(d, workspace_id, org))
    if record is None:
        raise workspace_not_found(workspace_id)
    return record
