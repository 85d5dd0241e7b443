"""Reading the audit log: newest first, filtered by type and time, paged by cursor.

A caller sees its current workspace's events, and the organisation-wide ones (members,
workspaces, service accounts) only if it reaches every workspace of the organisation.
No route updates or deletes an event.
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.organization import render, scope
from gateway.organization.input import parse_audit_filter
from gateway.organization.members import organization_workspace_ids
from gateway.organization.services import OrganizationServices
from gateway.platform.auth import Principal
from store import audit
from store.audit import AuditQuery


async def list_events(
    services: OrganizationServices, principal: Principal, args: Mapping[str, str]
) -> render.AuditPage:
    wanted = parse_audit_filter(args)
    org = principal.organization_id
    all_ws = await services.db.run(lambda d: organization_workspace_ids(d, org))
    query = AuditQuery(
        organization_id=org,
        workspace_id=principal.workspace_id,
        limit=wanted.limit + 1,
        type=wanted.type,
        since=wanted.since,
        before_id=wanted.cursor,
        organization_wide=scope.reaches_all(principal.workspaces, all_ws),
    )
    found = await services.db.run(lambda d: audit.query(d, query))
    page = found[: wanted.limit]
    more = len(found) > wanted.limit
    return {
        "object": "list",
        "events": [render.audit_event(e) for e in page],
        "has_more": more,
        "next_cursor": page[-1].id if more and page else None,
    }
