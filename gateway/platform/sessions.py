"""Resolving a person's user access token into a principal (management API only).

A token is found by its SHA-256 in the store (user tokens are rare next to API keys and
only reach the management API, so no in-memory ring). The organisation is the one the
request names in `X-Organization-ID`, else the user's oldest membership; a foreign or
unknown organisation answers 401 like a bad token would, revealing nothing.
"""

from __future__ import annotations

import hmac
from datetime import UTC, datetime

import sqlite_utils

from gateway.organization.roles import allowed
from gateway.platform.auth import Principal, UserSession
from gateway.platform.errors import invalid_api_key
from gateway.platform.state import AppState
from store import members, tokens, workspaces
from store.secrets import hash_key


async def user_principal(state: AppState, token: str, organization_id: str | None) -> Principal:
    """The principal for a user access token; 401 when it is unknown, expired or revoked."""
    digest = hash_key(token)
    now = datetime.now(UTC)
    session = await state.db.run(lambda d: _session(d, digest, organization_id, now))
    if session is None:
        raise invalid_api_key("Invalid, expired or revoked user access token.")
    return Principal(session)


def _session(
    db: sqlite_utils.Database, digest: str, organization_id: str | None, now: datetime
) -> UserSession | None:
    record = tokens.find(db, digest)
    if record is None or not hmac.compare_digest(record.token_hash, digest):
        return None
    if record.revoked_at is not None or record.expires_at <= now:
        return None
    user = members.user_by_id(db, record.user_id)
    memberships = members.active_memberships(db, record.user_id)
    if user is None or not memberships:
        return None
    if organization_id is not None:
        memberships = [m for m in memberships if m.organization_id == organization_id]
        if not memberships:
            return None
    member = memberships[0]
    return UserSession(
        user_id=user.id,
        email=user.email,
        organization_id=member.organization_id,
        role=member.role,
        workspaces=reachable_workspaces(db, member.organization_id, member.role, member.workspaces),
    )


def reachable_workspaces(
    db: sqlite_utils.Database, organization_id: str, role: str, listed: tuple[str, ...]
) -> tuple[str, ...]:
    """Owners and admins reach every workspace of their organisation; other roles the
    listed ones that still exist, in the organisation's order."""
    existing = [w.id for w in workspaces.list_workspaces(db, organization_id)]
    if allowed(role, "manage_workspaces"):
        return tuple(existing)
    return tuple(w for w in existing if w in listed)
