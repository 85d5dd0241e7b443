"""The caller's organisation and its plan: read it, and let its owner set the plan.

The plan (`free`, `pro`, `enterprise`, the spec's three) is what the organisation's SLA
credits are measured against (`gateway.status.sla`). Setting it is billing: the owner's
action `manage_billing`. The gateway keeps no contract, so the plan is what the owner says
it is; the change is audited (`organization.plan_changed`) in its own transaction.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

import attrs

from gateway.organization.render import iso
from gateway.organization.services import OrganizationServices
from gateway.platform.answers import Time
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import not_found
from gateway.platform.shapes import Choices, accepts_more, parse
from store import organizations
from store.organizations import OrganizationRecord

PLANS = ("free", "pro", "enterprise")
Plan = Annotated[str, Choices(PLANS)]


@accepts_more
@attrs.frozen
class PlanChange:
    """The plan the organisation's SLA credits are measured against."""

    plan: Plan


class Organization(TypedDict):
    """The caller's organisation, with its plan."""

    id: str
    object: Literal["organization"]
    name: str
    plan: Plan
    created_at: Time


def render(record: OrganizationRecord) -> Organization:
    return {
        "id": record.id,
        "object": "organization",
        "name": record.name,
        "plan": record.plan,
        "created_at": iso(record.created_at),
    }


def parse_plan(body: dict[str, Any]) -> str:
    return parse(PlanChange, body).plan


async def read(services: OrganizationServices, principal: Principal) -> Organization:
    """The caller's organisation, with its plan."""
    org_id = principal.organization_id
    record = await services.db.run(lambda d: organizations.get(d, org_id))
    if record is None:  # deleted under a live credential
        raise not_found("organization_not_found", f"No organisation '{org_id}'.")
    return render(record)


async def update(
    services: OrganizationServices, principal: Principal, body: dict[str, Any]
) -> Organization:
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
