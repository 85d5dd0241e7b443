"""Who is calling: the one authenticator every route uses, built once by the root.

An API key is resolved from the in-memory key ring (`gateway.platform.auth.KeyRing`),
else from the store (a key made while the server runs by another process, `gateway keys
create`, then joins the ring). A person's user access token (management routes only) is
found by its SHA-256 in the store (user tokens are rare next to API keys and
only reach the management API, so no in-memory ring). The organisation is the one the
request names in `X-Organization-ID`, else the user's oldest membership; a foreign or
unknown organisation answers 401 like a bad token would, revealing nothing.
"""

from __future__ import annotations

import hmac
from datetime import UTC, datetime

import attrs
import sqlite_utils
from quart import Request, request

from gateway.platform.auth import (
    AGENT_SESSION_HEADER,
    USER_TOKEN_PREFIX,
    KeyRing,
    Principal,
    UserSession,
    bearer_token,
    reaches_organization,
    session_of,
)
from gateway.platform.context import note_caller
from gateway.platform.errors import invalid_api_key
from gateway.platform.roles import Action, allowed
from store import keys, members, tokens, workspaces
from store.db import Database
from store.secrets import hash_key


@attrs.frozen
class Authenticator:
    """Resolves the credential of a request into its `Principal` (see the module docstring).

    Every method raises 401 for a missing or unknown credential and 403 for one that may
    not do what is asked; the Quart routes pass nothing (the current request) or `req`.
    """

    keyring: KeyRing
    db: Database

    async def caller(self, req: Request | None = None) -> Principal:
        """The API key calling this request, in its own workspace."""
        req = req if req is not None else request
        return await self.header(
            req.headers.get("authorization"),
            req.remote_addr,
            agent_session=req.headers.get(AGENT_SESSION_HEADER),
        )

    async def manager(self, action: Action, req: Request | None = None) -> Principal:
        """The caller of a management route, allowed to perform `action` in its workspace.

        Accepts an API key (a plain or a service account's) or a user access token. The
        workspace is the one named by `X-Workspace-ID`, else the caller's first; one the
        caller may not reach is a 404 like an unknown one. The role check comes first, so a
        caller learns nothing about workspaces it could not act in anyway.
        """
        req = req if req is not None else request
        principal = await self.any(req)
        principal.require_action(action)
        if reaches_organization(principal.credential):
            principal = await self._with_organization_reach(principal)
        return principal.in_workspace(req.headers.get("x-workspace-id") or None)

    async def reader(self, req: Request | None = None) -> Principal:
        """Any valid API key, in its own workspace, or in the one `X-Workspace-ID` names when
        the caller may reach it (as on the management routes, with a role that may view
        analytics): the status page and detailed health of the workspace asked for, never
        silently the caller's home one."""
        req = req if req is not None else request
        principal = await self.caller(req)
        wanted = req.headers.get("x-workspace-id") or None
        if wanted is None or wanted == principal.workspace_id:
            return principal
        return await self.manager("view_analytics", req)

    async def any(self, req: Request) -> Principal:
        """An API key or a user access token (the latter only for management routes)."""
        token = bearer_token(req.headers.get("authorization"))
        if token is not None and token.startswith(USER_TOKEN_PREFIX):
            organization = req.headers.get("x-organization-id") or None
            return await self.user(token, organization)
        return await self.caller(req)

    async def header(
        self,
        authorization: str | None,
        address: str | None,
        *,
        agent_session: str | None = None,
    ) -> Principal:
        """`caller` for callers that hold the raw header (the ASGI fast path); an agent's
        key carries the session its request names."""
        token = bearer_token(authorization)
        if token is None:
            raise invalid_api_key("Missing API key: send 'Authorization: Bearer <key>'.")
        ring = self.keyring
        record = ring.lookup(token)
        if record is None and token.startswith("gw_"):
            digest = hash_key(token)
            record = await self.db.run(lambda d: keys.find_by_hash(d, digest))
            if record is not None and record.status == "active":
                ring.put(record)
        principal = ring.admit(record, address)
        note_caller(principal.workspace_id, principal.key_id)
        if principal.key.agent_id is not None:
            return attrs.evolve(principal, agent_session=session_of(agent_session))
        return principal

    async def user(self, token: str, organization_id: str | None) -> Principal:
        """The principal for a user access token; 401 when it is unknown, expired or
        revoked."""
        digest = hash_key(token)
        now = datetime.now(UTC)
        session = await self.db.run(lambda d: _session(d, digest, organization_id, now))
        if session is None:
            raise invalid_api_key("Invalid, expired or revoked user access token.")
        return Principal(session)

    async def _with_organization_reach(self, principal: Principal) -> Principal:
        """A key acting as its organisation's owner reaching every workspace of it, its own
        first."""
        org, home = principal.organization_id, principal.key.workspace_id
        found = await self.db.run(lambda d: workspaces.list_workspaces(d, org))
        return attrs.evolve(principal, reach=(home, *(w.id for w in found if w.id != home)))


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
