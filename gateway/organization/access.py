"""People's access: log in for a user access token, log out, and their organisations.

`POST /v1/auth/token` checks the password against its Argon2id hash (an unknown email
costs the same time and answers the same 401), throttled per email and client address
with exponential backoff. The token is shown once and stored as its SHA-256.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import sqlite_utils
import trio

from gateway.organization import input as parse
from gateway.organization import render
from gateway.organization.secrets import new_user_token, verify_password
from gateway.organization.services import OrganizationServices
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, invalid_api_key
from store import members, organizations, tokens, workspaces
from store.organizations import OrganizationRecord
from store.secrets import hash_key
from store.tokens import UserTokenRecord
from store.workspaces import WorkspaceRecord


def invalid_credentials() -> ApiError:
    return ApiError(
        401, "invalid_credentials", "Invalid email or password.", type="authentication_error"
    )


async def log_in(
    services: OrganizationServices, body: dict[str, Any], address: str | None
) -> render.AccessToken:
    """A fresh user access token for a correct email and password."""
    asked = parse.login(body)
    email, password = asked.email, asked.password
    if not password:
        raise invalid_credentials()
    where = address or ""
    wait = services.logins.wait_s(email, where)
    if wait > 0:
        retry = max(1, int(wait + 0.999))
        raise ApiError(
            429,
            "too_many_login_attempts",
            "Too many failed logins; try again later.",
            type="rate_limit_error",
            headers={"retry-after": str(retry)},
            retry_after=retry,
        )
    user = await services.db.run(lambda d: members.user_by_email(d, email))
    stored = user.password_hash if user is not None else None
    ok = await trio.to_thread.run_sync(
        verify_password, stored, password, limiter=services.kdf_limiter
    )
    active = user is not None and bool(
        await services.db.run(lambda d: members.active_memberships(d, user.id))
    )
    if user is None or not ok or not active:
        services.logins.failed(email, where)
        raise invalid_credentials()
    services.logins.succeeded(email, where)
    return await _issue(services, user.id)


async def _issue(services: OrganizationServices, user_id: str) -> render.AccessToken:
    token = new_user_token()
    now = datetime.now(UTC)
    ttl = services.settings.user_token_ttl_s
    record = UserTokenRecord(
        token_hash=hash_key(token),
        user_id=user_id,
        created_at=now,
        expires_at=now + timedelta(seconds=ttl),
    )
    await services.db.run(lambda d: tokens.insert(d, record))
    return {
        "access_token": token,
        "token_type": "bearer",
        "expires_in": int(ttl),
        "expires_at": render.iso(record.expires_at),
    }


async def log_out(services: OrganizationServices, token: str | None) -> render.TokenRevoked:
    """Revoke the presented user access token; 401 if it is not a live one."""
    if token is None:
        raise invalid_api_key("Send the user access token to revoke.")
    digest = hash_key(token)
    now = datetime.now(UTC)
    if not await services.db.run(lambda d: tokens.revoke(d, digest, now)):
        raise invalid_api_key("Invalid, expired or revoked user access token.")
    return {"revoked": True}


def require_user(principal: Principal) -> str:
    """The user id of a user-token caller; API keys get 401 (spec: Authentication 4)."""
    if principal.kind != "user":
        raise invalid_api_key("This endpoint is called with a user access token, not an API key.")
    return principal.key_id


async def list_organizations(
    services: OrganizationServices, principal: Principal
) -> render.Memberships:
    user_id = require_user(principal)
    found = await services.db.run(lambda d: organizations.memberships(d, user_id))
    return {
        "object": "list",
        "organizations": [
            {"id": m.organization.id, "name": m.organization.name, "role": m.role} for m in found
        ],
    }


async def create_organization(
    services: OrganizationServices, principal: Principal, body: dict[str, Any]
) -> render.CreatedOrganization:
    """A new organisation with one workspace; the calling person is its owner."""
    user_id = require_user(principal)
    name = parse.organization_name(body)
    now = datetime.now(UTC)
    org = OrganizationRecord(name=name, created_at=now)
    workspace = WorkspaceRecord(
        name="Default", description="", created_at=now, organization_id=org.id
    )

    def store(d: sqlite_utils.Database) -> OrganizationRecord:
        organizations.insert(d, org)
        workspaces.insert(d, workspace)
        members.insert_member(
            d,
            members.MemberRecord(
                organization_id=org.id,
                user_id=user_id,
                email=principal.email or "",
                role="owner",
                status="active",
                created_at=now,
                joined_at=now,
            ),
        )
        return org

    event = audit_event(
        principal,
        "organization.created",
        target_type="organization",
        target_id=org.id,
        details={"name": name},
        organization_wide=True,
    )
    # Recorded in the new organisation's log, not in the caller's current one.
    await audited(services.db, attrs.evolve(event, organization_id=org.id), store)
    return {
        "id": org.id,
        "object": "organization",
        "name": name,
        "role": "owner",
        "created_at": render.iso(now),
        "workspaces": [render.workspace(workspace)],
    }
