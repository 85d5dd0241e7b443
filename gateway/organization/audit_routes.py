"""GET /v1/management/audit-log: the only route of the audit log (events are read-only)."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.organization.audit_log import list_events
from gateway.organization.input import AuditQuery
from gateway.organization.render import AuditPage
from gateway.organization.services import OrganizationServices
from gateway.platform.apidoc import operation
from gateway.platform.web import json_response


def audit_log_blueprint(services: OrganizationServices) -> Blueprint:
    bp = Blueprint("audit_log", __name__)

    @bp.get("/v1/management/audit-log")
    @operation(
        "Audit events, newest first, paged by cursor",
        "audit-log",
        query=AuditQuery,
        answer=AuditPage,
        permission="view_audit_log",
        description="The workspace's events, and the organisation-wide ones (members, "
        "workspaces, service accounts) for a caller who reaches every workspace.",
        errors={400: "invalid_period"},
    )
    async def audit_log() -> Response:
        principal = await services.auth.manager("view_audit_log")
        return json_response(await list_events(services, principal, request.args))

    return bp
