"""SLA-credit requests: `POST /v1/billing/sla-credit` and the read of one request.

Both act on the caller's workspace; the uptime and credit are computed by
`gateway.status.credits` from the workspace's incident history, against the SLA of the
organisation's plan.
"""

from __future__ import annotations

from datetime import UTC, datetime

from quart import Blueprint, Response

from gateway.platform.apidoc import operation
from gateway.platform.audit import audit_event
from gateway.platform.auth import Principal
from gateway.platform.errors import not_found
from gateway.platform.roles import Action
from gateway.platform.web import json_response, read_object
from gateway.status import render
from gateway.status.credits import plan_of, request_credit
from gateway.status.input import SlaSpec, parse_sla_request
from gateway.status.services import StatusServices
from store import sla as sla_store

SLA = "/v1/billing/sla-credit"


def billing_blueprint(svc: StatusServices) -> Blueprint:
    api = BillingApi(svc)
    bp = Blueprint("billing", __name__)
    bp.add_url_rule(SLA, "create_sla_credit", api.create, methods=["POST"])
    bp.add_url_rule(f"{SLA}/<request_id>", "read_sla_credit", api.read, methods=["GET"])
    return bp


class BillingApi:
    def __init__(self, svc: StatusServices) -> None:
        self.svc = svc

    async def _manager(self, action: Action) -> Principal:
        """The one permission check of this blueprint's management routes: the caller's
        role (`gateway.platform.roles`) must allow `action` in its workspace."""
        return await self.svc.auth.manager(action)

    @operation(
        "Request an SLA credit for a month; uptime and credit are computed at once",
        "billing",
        body=SlaSpec,
        answer=render.SlaRequest,
        status=201,
        permission="manage_billing",
        errors={400: ("period_not_started", "invalid_incident_ids")},
    )
    async def create(self) -> Response:
        principal = await self._manager("manage_billing")
        spec = parse_sla_request(await read_object())
        record = await request_credit(
            self.svc,
            workspace_id=principal.workspace_id,
            plan=await plan_of(self.svc, principal.organization_id),
            spec=spec,
            now=datetime.now(UTC),
            audit=audit_event(
                principal,
                "sla_credit.requested",
                target_type="sla_credit_request",
                target_id="",
                details={"period": spec.period},
            ),
        )
        return json_response(render.sla_request(record), 201)

    @operation(
        "One SLA-credit request",
        "billing",
        answer=render.SlaRequest,
        permission="view_analytics",
        errors={404: "sla_request_not_found"},
    )
    async def read(self, request_id: str) -> Response:
        ws = (await self._manager("view_analytics")).workspace_id
        record = await self.svc.db.run(lambda d: sla_store.get(d, request_id, ws))
        if record is None:
            raise not_found(
                "sla_request_not_found",
                f"No SLA-credit request '{request_id}'.",
                param="request_id",
            )
        return json_response(render.sla_request(record))
