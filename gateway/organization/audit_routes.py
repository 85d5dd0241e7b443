"""GET /v1/management/audit-log: the only route of the audit log (events are read-only)."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.organization.audit_log import list_events
from gateway.organization.services import OrganizationServices
from gateway.platform.web import json_response


def audit_log_blueprint(services: OrganizationServices) -> Blueprint:
    bp = Blueprint("audit_log", __name__)

    @bp.get("/v1/management/audit-log")
    async def audit_log() -> Response:
        principal = await services.auth.manager("view_audit_log")
        return json_response(await list_events(services, principal, dict(request.args)))

    return bp
