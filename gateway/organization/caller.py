"""Who is calling, as the caller itself may know it: `GET /v1/management/me`.

A console (or any client) signed in with a credential asks once what that credential is
and what its role may do, so it shows forms it may use and says why the others are
read-only, instead of finding out from one 403 after another. It reveals nothing the
caller could not learn by trying: its own role, workspaces and permissions.
"""

from __future__ import annotations

from gateway.organization.render import Caller
from gateway.platform.auth import Principal
from gateway.platform.roles import ACTIONS, allowed


def describe(principal: Principal) -> Caller:
    """The caller's credential, role, workspaces and the actions its role allows (pure)."""
    is_user = principal.kind == "user"
    return {
        "object": "caller",
        "kind": principal.kind,
        "id": principal.key_id,
        "name": principal.email if is_user else principal.key.name,
        "role": principal.role,
        "organization_id": principal.organization_id,
        "workspace_id": principal.workspace_id,
        "workspaces": list(principal.workspaces),
        "actions": [action for action in ACTIONS if allowed(principal.role, action)],
        "permissions": [] if is_user else list(principal.key.permissions),
    }
