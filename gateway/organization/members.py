"""Members: invite, list, change a role, remove; and accepting an invitation.

An invitation makes an `invited` member with a one-time token (shown once, stored as its
SHA-256) that expires after `invitation_ttl_s`. Accepting it with a password makes the
member active (`member.joined`). A caller hands out or takes away roles only up to its
own, and the last owner of an organisation can be neither demoted nor removed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlite_utils
import trio

from gateway.organization import input as parse
from gateway.organization import render, scope
from gateway.organization.secrets import hash_password, new_invitation_token, verify_password
from gateway.organization.services import OrganizationServices
from gateway.platform.answers import Deleted, ListOf, listing
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, not_found, permission_denied
from gateway.platform.roles import Role, outranks_or_equals
from store import members, workspaces
from store.audit import AuditEvent
from store.members import MemberRecord
from store.secrets import hash_key


def member_not_found(member_id: str) -> ApiError:
    return not_found("member_not_found", f"No member '{member_id}'.")


async def list_members(
    services: OrganizationServices, principal: Principal
) -> ListOf[render.Member]:
    org = principal.organization_id
    records, all_ws = await services.db.run(
        lambda d: (members.list_members(d, org), organization_workspace_ids(d, org))
    )
    shown = [
        render.member(r)
        for r in records
        if scope.visible(r.workspaces, principal.workspaces, all_ws)
    ]
    return listing(shown)


async def invite(
    services: OrganizationServices, principal: Principal, body: dict[str, Any]
) -> render.InvitedMember:
    """Invite a person; the answer carries the one-time `invitation_token`."""
    spec = parse.parse_invitation(body)
    check_ceiling(principal, spec.role)
    listed = await checked_workspaces(services, principal, spec.workspaces, spec.role)
    token = new_invitation_token()
    now = datetime.now(UTC)
    expires = now + timedelta(seconds=services.settings.invitation_ttl_s)
    org = principal.organization_id

    def store(d: sqlite_utils.Database) -> MemberRecord:
        user = members.ensure_user(d, spec.email, now)
        if members.member_of(d, user.id, org) is not None:
            raise ApiError(
                409,
                "member_exists",
                "This person is already a member or invited.",
                type="conflict_error",
            )
        record = MemberRecord(
            organization_id=org,
            user_id=user.id,
            email=spec.email,
            role=spec.role,
            status="invited",
            workspaces=listed,
            invitation_hash=hash_key(token),
            invitation_expires_at=expires,
            created_at=now,
        )
        return members.insert_member(d, record)

    event = _event(principal, "member.invited", "", spec.email, {"role": spec.role})
    record = await audited(services.db, event, store, target_of=lambda r: r.id)
    return {
        **render.member(record),
        "invitation_token": token,
        "invitation_expires_at": render.iso(expires),
    }


async def change_role(
    services: OrganizationServices, principal: Principal, member_id: str, body: dict[str, Any]
) -> render.Member:
    new_role = parse.role_change(body)
    current = await _find(services, principal, member_id)
    check_ceiling(principal, current.role)
    check_ceiling(principal, new_role)
    org = principal.organization_id

    def store(d: sqlite_utils.Database) -> MemberRecord:
        if current.role == "owner" and new_role != "owner":
            _keep_an_owner(d, org, current)
        members.set_role(d, member_id, new_role)
        found = members.get_member(d, member_id, org)
        assert found is not None
        return found

    details = {"from": current.role, "to": new_role}
    event = _event(principal, "member.role_changed", member_id, current.email, details)
    return render.member(await audited(services.db, event, store))


async def remove(services: OrganizationServices, principal: Principal, member_id: str) -> Deleted:
    current = await _find(services, principal, member_id)
    check_ceiling(principal, current.role)
    org = principal.organization_id

    def store(d: sqlite_utils.Database) -> bool:
        if current.role == "owner":
            _keep_an_owner(d, org, current)
        members.remove(d, member_id)
        return True

    event = _event(principal, "member.removed", member_id, current.email, {"role": current.role})
    await audited(services.db, event, store)
    return {"id": member_id, "object": "member", "deleted": True}


async def accept(
    services: OrganizationServices, body: dict[str, Any], address: str | None
) -> render.JoinedMember:
    """Accept an invitation with a password. An unknown, used or expired token, or the
    wrong password of a person who already has one, is the same 401."""
    asked = parse.acceptance(body)
    token, password = asked.token, asked.password
    digest = hash_key(token)
    now = datetime.now(UTC)
    found = await services.db.run(lambda d: members.by_invitation(d, digest))
    if found is None or found.invitation_expires_at is None or found.invitation_expires_at <= now:
        raise invalid_invitation()
    user = await services.db.run(lambda d: members.user_by_id(d, found.user_id))
    assert user is not None
    if user.password_hash is not None:
        ok = await trio.to_thread.run_sync(
            verify_password, user.password_hash, password, limiter=services.kdf_limiter
        )
        if not ok:
            raise invalid_invitation()
        new_hash = user.password_hash
    else:
        new_hash = await trio.to_thread.run_sync(
            hash_password, password, limiter=services.kdf_limiter
        )

    def store(d: sqlite_utils.Database) -> MemberRecord | None:
        again = members.by_invitation(d, digest)
        if again is None or again.id != found.id:
            return None  # used meanwhile
        members.set_password(d, found.user_id, new_hash)
        members.activate(d, found.id, now)
        return members.get_member(d, found.id, found.organization_id)

    event = AuditEvent(
        organization_id=found.organization_id,
        workspace_id="",
        type="member.joined",
        actor_id=found.user_id,
        actor_email=found.email,
        target_type="member",
        target_id=found.id,
        target_email=found.email,
        ip_address=address,
        timestamp=now,
        details={"role": found.role},
    )
    joined = await audited(services.db, event, store)
    if joined is None:
        raise invalid_invitation()
    return {**render.member(joined), "organization_id": joined.organization_id}


def invalid_invitation() -> ApiError:
    return ApiError(
        401,
        "invalid_invitation",
        "This invitation is invalid, already used or expired.",
        type="authentication_error",
    )


async def checked_workspaces(
    services: OrganizationServices, principal: Principal, listed: tuple[str, ...] | None, role: Role
) -> tuple[str, ...]:
    """The workspaces to record for a member or service account: each must be one the
    caller reaches (an unknown or foreign id is the same 400). Owners and admins with none
    listed cover the whole organisation (recorded as none); others default to the
    caller's current workspace."""
    if listed is None:
        if role in ("owner", "admin"):
            return ()
        return (principal.workspace_id,)
    org = principal.organization_id
    existing = set(await services.db.run(lambda d: organization_workspace_ids(d, org)))
    for workspace_id in listed:
        if workspace_id not in existing or workspace_id not in principal.workspaces:
            raise ApiError(
                400,
                "unknown_workspace",
                f"No workspace '{workspace_id}'.",
                param="workspaces",
                value=workspace_id,
            )
    return listed


def check_ceiling(principal: Principal, role: str) -> None:
    if not outranks_or_equals(principal.role, role):
        raise permission_denied(f"A caller cannot grant or change the role '{role}'.")


def _keep_an_owner(d: sqlite_utils.Database, org: str, current: MemberRecord) -> None:
    if current.status == "active" and members.count_owners(d, org) <= 1:
        raise ApiError(
            409,
            "last_owner",
            "The last owner of an organisation can be neither removed nor demoted.",
            type="conflict_error",
        )


async def _find(
    services: OrganizationServices, principal: Principal, member_id: str
) -> MemberRecord:
    """A member the caller may see; any other id answers like an unknown one."""
    org = principal.organization_id
    found, all_ws = await services.db.run(
        lambda d: (members.get_member(d, member_id, org), organization_workspace_ids(d, org))
    )
    if found is None or not scope.visible(found.workspaces, principal.workspaces, all_ws):
        raise member_not_found(member_id)
    return found


def organization_workspace_ids(d: sqlite_utils.Database, organization_id: str) -> list[str]:
    return [w.id for w in workspaces.list_workspaces(d, organization_id)]


def _event(
    principal: Principal, kind: str, member_id: str, email: str, details: dict[str, Any]
) -> AuditEvent:
    return audit_event(
        principal,
        kind,
        target_type="member",
        target_id=member_id,
        target_email=email,
        details=details,
        organization_wide=True,
    )
