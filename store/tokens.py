"""User access tokens: short-lived bearer tokens of a person, stored as SHA-256 digests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from store import columns
from store.handle import Handle


@attrs.frozen(kw_only=True)
class UserTokenRecord:
    token_hash: str
    user_id: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None


def _from_row(row: Mapping[str, Any]) -> UserTokenRecord:
    return UserTokenRecord(
        token_hash=row["token_hash"],
        user_id=row["user_id"],
        created_at=columns.from_iso(row["created_at"]),
        expires_at=columns.from_iso(row["expires_at"]),
        revoked_at=columns.from_iso_or_none(row["revoked_at"]),
    )


def insert(db: Handle, record: UserTokenRecord) -> None:
    columns.insert_row(
        db,
        "user_tokens",
        {
            "token_hash": record.token_hash,
            "user_id": record.user_id,
            "created_at": columns.to_iso(record.created_at),
            "expires_at": columns.to_iso(record.expires_at),
            "revoked_at": None,
        },
    )


def find(db: Handle, token_hash: str) -> UserTokenRecord | None:
    rows = list(db.query("SELECT * FROM user_tokens WHERE token_hash = ?", [token_hash]))
    return _from_row(rows[0]) if rows else None


def revoke(db: Handle, token_hash: str, at: datetime) -> bool:
    """Revoke a live token; False if it is unknown or already revoked."""
    cursor = db.execute(
        "UPDATE user_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL",
        [columns.to_iso(at), token_hash],
    )
    return cursor.rowcount > 0


def revoke_all(db: Handle, user_id: str, at: datetime) -> None:
    db.execute(
        "UPDATE user_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
        [columns.to_iso(at), user_id],
    )
