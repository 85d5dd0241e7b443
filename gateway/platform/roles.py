"""Who may do what: the one table of roles and actions, pure and I/O-free.

The spec names four roles and eleven action rows and leaves the cells open; this table
fills them (published in README, "Roles and permissions"). Three further rows cover the
management routes the spec's rows do not name (workspaces, reading configuration, the
audit log). Every management route names exactly one action (each family's routes),
and `allowed` is the only place that answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

Role = Literal["owner", "admin", "developer", "viewer"]
ROLES: tuple[Role, ...] = get_args(Role)

Action = Literal[
    "delete_organization",
    "manage_billing",
    "invite_members",
    "remove_members",
    "create_api_keys",
    "revoke_api_keys",
    "configure_providers",
    "edit_routing_rules",
    "use_api_keys",
    "view_analytics",
    "export_data",
    "manage_workspaces",
    "view_configuration",
    "view_audit_log",
]
ACTIONS: tuple[Action, ...] = get_args(Action)

_ALL = frozenset(ROLES)
_ADMINS = frozenset({"owner", "admin"})

MATRIX: Mapping[Action, frozenset[str]] = {
    "delete_organization": frozenset({"owner"}),
    "manage_billing": frozenset({"owner"}),
    "invite_members": _ADMINS,
    "remove_members": _ADMINS,
    "create_api_keys": _ADMINS,
    "revoke_api_keys": _ADMINS,
    "configure_providers": _ADMINS,
    "edit_routing_rules": _ADMINS,
    "use_api_keys": frozenset({"owner", "admin", "developer"}),
    "view_analytics": _ALL,
    "export_data": _ADMINS,
    "manage_workspaces": _ADMINS,
    "view_configuration": frozenset({"owner", "admin", "developer"}),
    "view_audit_log": _ADMINS,
}
"""Action -> the roles that may perform it."""

_RANK: Mapping[str, int] = {"viewer": 0, "developer": 1, "admin": 2, "owner": 3}

# The data-plane permissions a service account's key holds, by role: a key can only do
# what its role may, so a viewer's key calls no model.
_USE = ("chat", "embeddings", "audio", "files", "models")
KEY_PERMISSIONS: Mapping[str, tuple[str, ...]] = {
    "owner": (*_USE, "management", "admin"),
    "admin": (*_USE, "management"),
    "developer": (*_USE, "management"),
    "viewer": ("management",),
}


def allowed(role: str | None, action: Action) -> bool:
    """Whether `role` may perform `action`; no role may do nothing."""
    return role is not None and role in MATRIX[action]


def outranks_or_equals(granter: str | None, role: str) -> bool:
    """A caller may only hand out (or take away) a role up to its own."""
    return granter is not None and _RANK[granter] >= _RANK[role]


def is_role(value: object) -> bool:
    return isinstance(value, str) and value in ROLES


def legacy_key_role(permissions: tuple[str, ...]) -> Role | None:
    """The role a plain API key acts with on the management API: `admin` permission is
    full control of its workspace (owner), `management` is an admin, others none."""
    if "admin" in permissions:
        return "owner"
    if "management" in permissions:
        return "admin"
    return None
