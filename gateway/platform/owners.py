"""An organisation always keeps a working owner. Pure but for one store read.

No change through the API may leave an organisation with no active owner-level
credential, or nobody could manage it again without the machine's command line: deleting
or revoking the last one, a key dropping its own `admin`, a key shutting itself out by
its allowed IPs. Such a change is a 409 `last_owner_credential` that says why, checked in
the transaction that makes the change.

Owner-level: an active member with the owner role (a person), or an active, unexpired
API key that acts as an owner: the operator's key and an owner service account's key
(role `owner`), or a key without a role holding `admin` (an admin key). Agents' keys are
never owners. A key the caller is changing counts as it will be after the change; if it
is the caller's own and its allowed IPs would no longer admit the caller's address, it
does not count (the caller could not use it again), though other keys limited to other
addresses do: someone can use them from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import sqlite_utils

from gateway.platform.auth import ip_allowed
from gateway.platform.errors import ApiError
from gateway.platform.roles import legacy_key_role
from store import keys, members
from store.keys import ApiKeyRecord

LAST_OWNER_CREDENTIAL = "last_owner_credential"


def owner_level(record: ApiKeyRecord, now: datetime) -> bool:
    """Whether the key is an active, unexpired key acting as its organisation's owner."""
    if record.status != "active" or record.agent_id is not None:
        return False
    if record.expires_at is not None and record.expires_at <= now:
        return False
    role = record.role if record.role is not None else legacy_key_role(record.permissions)
    return role == "owner"


def usable_by_caller(record: ApiKeyRecord, caller_key_id: str, address: str | None) -> bool:
    """False for the caller's own key when its allowed IPs shut out the caller's address."""
    return record.id != caller_key_id or ip_allowed(record.allowed_ips, address)


def keep_an_owner(
    db: sqlite_utils.Database,
    organization_id: str,
    *,
    after: Mapping[str, ApiKeyRecord | None],
    why: str,
    now: datetime,
) -> None:
    """Raise the 409 unless the organisation keeps an owner-level credential once the keys
    in `after` are replaced by their new records (None: gone, or no longer counting).
    `why` says what the change would do, for the message."""
    if members.count_owners(db, organization_id) > 0:
        return
    for stored in keys.active_in_organization(db, organization_id):
        record = after.get(stored.id, stored)
        if record is not None and owner_level(record, now):
            return
    raise ApiError(
        409,
        LAST_OWNER_CREDENTIAL,
        f"{why}, which would leave the organisation with no active owner-level credential "
        "(an owner's or admin key, an owner service account or an owner member): nobody "
        "could manage it any more. Create another admin key or invite an owner first.",
        type="conflict_error",
    )
