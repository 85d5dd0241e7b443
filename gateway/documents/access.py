"""Who may see a data document of each classification: one table, pure.

The spec lists the classifications and says nothing of who may read them. Ours: any key with
the `files` permission reads `public`, `internal` and `confidential` documents of its
workspace; `phi` and `privileged` (health data, legal privilege) also need a management
role (owner or admin: an admin key, or a service account or member with that role). A
document a caller may not see answers like an unknown one (404), is left out of lists and
search, and may not be uploaded by that caller (403).
"""

from __future__ import annotations

from gateway.platform.auth import Principal
from gateway.platform.errors import permission_denied

CLASSIFICATIONS = ("public", "internal", "confidential", "phi", "privileged")
RESTRICTED = frozenset({"phi", "privileged"})
_RESTRICTED_ROLES = frozenset({"owner", "admin"})


def readable(principal: Principal) -> tuple[str, ...]:
    """The classifications `principal` may read (it holds `files`; checked before)."""
    if principal.role in _RESTRICTED_ROLES:
        return CLASSIFICATIONS
    return tuple(c for c in CLASSIFICATIONS if c not in RESTRICTED)


def require_readable(principal: Principal, classification: str) -> None:
    if classification not in readable(principal):
        raise permission_denied(
            f"Documents classified '{classification}' need an owner or admin role."
        )
