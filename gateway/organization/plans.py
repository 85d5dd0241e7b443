"""The caller's organisation and its plan: read it, and let its owner set the plan.

The plan (`free`, `pro`, `enterprise`, the spec's three) is what the organisation's SLA
credits are measured against (`gateway.status.sla`). Setting it is billing: the owner's
action `manage_billing`. The gateway keeps no contract, so the plan is what the owner says
it is; the change is audited (`organization.plan_changed`) in its own transaction.
"""

from __future__ import annotations

from typing import Any

from gateway.organization.render import iso
from gateway.organization.services import OrganizationServices
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import invalid_request, not_found
from store import organizations
from store.organizations import OrganizationRecord

PLANS = ("free", "pro", "enterprise")


def render(record: OrganizationRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "organization",
        "name": record.name,
        "plan": record.plan,
        "created_at": iso(record.created_at),
    }


def parse_plan(body: dict[str, Any]) -> str:
    plan = body.get("plan")
    if plan not in PLANS:
        raise invalid_request(
            f"'plan' must be one of {', '.join(PLANS)}.", param="plan", value=plan
        )
    assert isinstance(plan, str)
    return plan


async def read(services: OrganizationServices, principal: Principal) -> dict[str, Any]:
    """The caller's organisation, with its plan."""
    org_id = principal.organization_id
    record = await services.db.run(lambda d: organizations.get(d, org_id))
    if record is None:  # deleted under a live credential
        raise not_found("organization_not_found", f"No organisation '{org_id}'.")
    return render(record)


async def update(
    services: OrganizationServices, principal: Principal, body: dict[str, Any]
) -> dict[str, Any]:
    """Set the caller's organisation's `plan`; other fields are not changed here."""
    plan = parse_plan(body)
    org_id = principal.organization_id
    event = audit_event(
        principal,
        "organization.plan_changed",
        target_type="organization",
        target_id=org_id,
        details={"plan": plan},
        organization_wide=True,
    )
    record = await audited(services.db, event, lambda d: organizations.set_plan(d, org_id, plan))
    if record is None:
        raise not_found("organization_not_found", f"No organisation '{org_id}'.")
    return render(record)
