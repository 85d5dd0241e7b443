"""Who is calling: bearer keys resolved from memory, permissions, model and IP allowlists.

The key ring is filled from the store at start and kept in step by the management API
(create, rotate, revoke, delete), so authenticating a request costs one SHA-256 and one
dict lookup. Only hashes are held; comparison of the stored hash is constant-time.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import attrs

from gateway.platform.errors import ApiError, invalid_api_key, permission_denied
from store.keys import ApiKeyRecord
from store.secrets import hash_key

ALL_PERMISSIONS = ("chat", "embeddings", "audio", "files", "models", "management", "admin")
DEFAULT_PERMISSIONS: Mapping[str, tuple[str, ...]] = {
    "admin": ALL_PERMISSIONS,
    "prod": ("chat", "embeddings", "audio", "files", "models"),
    "dev": ("chat", "embeddings", "audio", "files", "models"),
    "tenant": ("chat", "embeddings", "audio", "files", "models"),
}
MANAGEMENT_PERMISSIONS = frozenset({"management", "admin"})


@attrs.frozen
class Principal:
    """The authenticated caller of one request."""

    key: ApiKeyRecord

    @property
    def key_id(self) -> str:
        return self.key.id

    @property
    def workspace_id(self) -> str:
        return self.key.workspace_id

    def has(self, permission: str) -> bool:
        granted = self.key.permissions
        if "admin" in granted:
            return True
        if permission == "management":
            return "management" in granted
        return permission in granted

    def require(self, permission: str) -> None:
        """Raise 403 unless the key holds `permission` (admin holds every permission)."""
        if not self.has(permission):
            raise permission_denied(f"This API key lacks the '{permission}' permission.")

    def require_model(self, model: str) -> None:
        """Raise 403 when the key is restricted to other models."""
        if not model_allowed(self.key.allowed_models, model):
            raise ApiError(
                403,
                "model_not_allowed",
                f"This API key may not use the model '{model}'.",
                type="permission_error",
                model=model,
            )


def model_allowed(patterns: Iterable[str], model: str) -> bool:
    """Empty patterns allow every model; a trailing `*` matches a prefix."""
    patterns = tuple(patterns)
    if not patterns:
        return True
    return any(model.startswith(p[:-1]) if p.endswith("*") else model == p for p in patterns)


def ip_allowed(allowlist: Iterable[str], address: str | None) -> bool:
    """Empty allowlists allow every address; entries are addresses or CIDR networks."""
    entries = tuple(allowlist)
    if not entries:
        return True
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for entry in entries:
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


@attrs.define
class KeyRing:
    """The active keys by hash, plus when each was last used (flushed to the store)."""

    _by_hash: dict[str, ApiKeyRecord] = attrs.field(factory=dict)
    _last_used: dict[str, datetime] = attrs.field(factory=dict)

    def load(self, records: Iterable[ApiKeyRecord]) -> None:
        self._by_hash = {record.key_hash: record for record in records}

    def put(self, record: ApiKeyRecord) -> None:
        """Add or replace a key (after create, patch or rotate)."""
        self._by_hash[record.key_hash] = record

    def forget(self, key_hash: str) -> None:
        self._by_hash.pop(key_hash, None)

    def forget_id(self, key_id: str) -> None:
        for key_hash, record in list(self._by_hash.items()):
            if record.id == key_id:
                del self._by_hash[key_hash]

    def lookup(self, token: str) -> ApiKeyRecord | None:
        """The key record for a presented secret, if the ring holds it."""
        digest = hash_key(token)
        record = self._by_hash.get(digest)
        if record is None or not hmac.compare_digest(record.key_hash, digest):
            return None
        return record

    def admit(self, record: ApiKeyRecord | None, address: str | None) -> Principal:
        """The caller for a looked-up key, or the 401/403 `ApiError` that refuses it."""
        if record is None:
            raise invalid_api_key()
        now = datetime.now(UTC)
        if record.status != "active" or (record.expires_at and record.expires_at <= now):
            raise invalid_api_key("This API key has been revoked or has expired.")
        if not ip_allowed(record.allowed_ips, address):
            raise permission_denied("This API key may not be used from this address.")
        self._last_used[record.id] = now
        return Principal(record)

    @property
    def pending_last_used(self) -> int:
        """Keys whose last use waits for the last-used worker (its queue, for /metrics)."""
        return len(self._last_used)

    def take_last_used(self) -> dict[str, datetime]:
        """The last-use times gathered since the previous call (for a batched store write)."""
        taken, self._last_used = self._last_used, {}
        return taken
