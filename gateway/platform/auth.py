"""Who is calling: bearer keys resolved from memory, permissions, model and IP allowlists.

The key ring is filled from the store at start and kept in step by the management API
(create, rotate, revoke, delete), so authenticating a request costs one SHA-256 and one
dict lookup. Only hashes are held; comparison of the stored hash is constant-time.

A principal is one of three credentials: a plain API key (its permissions decide:
`management` acts as the admin role within its one workspace, `admin` as its
organisation's owner, reaching every workspace as the operator's key does, see
`reaches_organization`), a service account's key (its role within its workspace scope,
resolved when the key is loaded) or a person's user access token (the member's role in one
organisation). Management routes ask `require_action`, which reads the one roles table
(`gateway.platform.roles`).
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Literal

import attrs

from gateway.platform.errors import ApiError, invalid_api_key, not_found, permission_denied
from gateway.platform.roles import Action, allowed, legacy_key_role
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
USER_TOKEN_PREFIX = "gwu_"  # a person's user access token (`gateway.platform.callers`)
# An agent's key names the session a request belongs to (its budgets are per session).
AGENT_SESSION_HEADER = "x-agent-session"
DEFAULT_SESSION = "default"
MAX_SESSION_CHARS = 200


CredentialKind = Literal["api_key", "service_account", "user"]


@attrs.frozen
class UserSession:
    """A person calling with a user access token, as a member of one organisation."""

    user_id: str
    email: str
    organization_id: str
    role: str
    workspaces: tuple[str, ...]
    """The workspaces the member may act in, the default first."""


@attrs.frozen
class Principal:
    """The authenticated caller of one request.

    `workspace` is the workspace this request acts in when the caller chose one of
    several (`X-Workspace-ID`); otherwise the credential's first workspace.
    """

    credential: ApiKeyRecord | UserSession
    workspace: str | None = None
    # Keys acting as the organisation's owner (`reaches_organization`): every workspace of
    # its organisation, its own first, read per management request so that a workspace it
    # just created is included.
    reach: tuple[str, ...] = ()
    # The session an agent's request names (`X-Agent-Session`, `session_of`).
    agent_session: str = DEFAULT_SESSION

    @property
    def key(self) -> ApiKeyRecord:
        """The API key; a user access token has none and is refused where one is needed."""
        if isinstance(self.credential, UserSession):
            raise invalid_api_key("This endpoint needs an API key, not a user access token.")
        return self.credential

    @property
    def kind(self) -> CredentialKind:
        if isinstance(self.credential, UserSession):
            return "user"
        return "service_account" if self.credential.service_account_id else "api_key"

    @property
    def key_id(self) -> str:
        """The credential's id: the key's, or the user's for a user access token."""
        if isinstance(self.credential, UserSession):
            return self.credential.user_id
        return self.credential.id

    @property
    def email(self) -> str | None:
        return self.credential.email if isinstance(self.credential, UserSession) else None

    @property
    def organization_id(self) -> str:
        return self.credential.organization_id

    @property
    def workspaces(self) -> tuple[str, ...]:
        """Every workspace this caller may act in."""
        if self.reach:
            return self.reach
        credential = self.credential
        if isinstance(credential, UserSession):
            return credential.workspaces
        return credential.scope or (credential.workspace_id,)

    @property
    def workspace_id(self) -> str:
        if self.workspace is not None:
            return self.workspace
        credential = self.credential
        if isinstance(credential, ApiKeyRecord):
            return credential.workspace_id
        return credential.workspaces[0] if credential.workspaces else ""

    @property
    def role(self) -> str | None:
        """The role on the management API (see `gateway.platform.roles`)."""
        credential = self.credential
        if isinstance(credential, UserSession):
            return credential.role
        if credential.role is not None:
            return credential.role
        return legacy_key_role(credential.permissions)

    def has(self, permission: str) -> bool:
        if isinstance(self.credential, UserSession):
            return False
        granted = self.credential.permissions
        if "admin" in granted:
            return True
        if permission == "management":
            return "management" in granted
        return permission in granted

    def require(self, permission: str) -> None:
        """Raise 403 unless the key holds `permission` (admin holds every permission)."""
        if not self.has(permission):
            raise permission_denied(f"This API key lacks the '{permission}' permission.")

    def require_action(self, action: Action) -> None:
        """Raise 403 unless the caller's role may perform `action`."""
        if not allowed(self.role, action):
            who = f"The role '{self.role}'" if self.role else "This API key"
            raise permission_denied(f"{who} may not {action.replace('_', ' ')}.")

    def in_workspace(self, workspace_id: str | None) -> Principal:
        """This caller acting in `workspace_id` (None: its default). A workspace it may not
        act in answers 404 exactly like one that does not exist."""
        if workspace_id is None or workspace_id == self.workspace_id:
            return self
        if workspace_id not in self.workspaces:
            raise not_found("workspace_not_found", f"No workspace '{workspace_id}'.")
        return attrs.evolve(self, workspace=workspace_id)

    def may_use(self, model: str) -> bool:
        """Whether the key's `allowed_models` let it use `model`."""
        return model_allowed(self.key.allowed_models, model)

    def require_model(self, model: str) -> None:
        """Raise 403 when the key is restricted to other models."""
        if not self.may_use(model):
            raise self.model_refusal(model)

    def model_refusal(self, model: str) -> ApiError:
        """The 403 for a model the key's `allowed_models` leave out."""
        return ApiError(
            403,
            "model_not_allowed",
            f"This API key may not use the model '{model}'.",
            type="permission_error",
            model=model,
        )


def reaches_organization(credential: ApiKeyRecord | UserSession) -> bool:
    """Whether this API key acts as its organisation's owner and so, like an owner person,
    reaches every workspace of it: the operator's key (made at start, `ensure_admin_key`,
    or by `gateway keys create --type admin` on the machine: role `owner`) and an admin
    key made through the API (no role, holding `admin`; the spec gives `gw_admin_` keys
    full management access). The workspaces it creates can then be read and given members,
    service accounts and keys. Every other API key acts in its one workspace (or a
    service account's listed ones), and agents' keys in their agent's."""
    if not isinstance(credential, ApiKeyRecord):
        return False
    if credential.service_account_id is not None or credential.agent_id is not None:
        return False
    if credential.role is not None:
        return credential.role == "owner"
    return "admin" in credential.permissions


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


def session_of(header: str | None) -> str:
    """The session a request names (`X-Agent-Session`), else the agent's default one.

    A longer name is refused rather than cut: two sessions sharing their first 200
    characters would silently share one budget."""
    if not header:
        return DEFAULT_SESSION
    name = header.strip()
    if len(name) > MAX_SESSION_CHARS:
        raise ApiError(
            400,
            "invalid_request",
            f"'X-Agent-Session' names a session in at most {MAX_SESSION_CHARS} characters.",
            param="X-Agent-Session",
        )
    return name or DEFAULT_SESSION


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


# A key once admitted: its record (the cache holds while the ring holds this very
# record), the caller it makes, and when it expires (a POSIX time; inf: never).
_Admitted = tuple[ApiKeyRecord, Principal, float]


@attrs.define
class KeyRing:
    """The active keys by hash, plus when each was last used (flushed to the store).

    A key's caller (`Principal`) is made once per record (`_admitted`): a request then
    checks only what changes with time or address (expiry, the IP allowlist). The
    cache is keyed by the record itself, so revoking, patching or rotating a key (the
    ring drops or replaces its record) takes effect on the next request as before."""

    _by_hash: dict[str, ApiKeyRecord] = attrs.field(factory=dict)
    # Last uses as POSIX times (a float per request, not a datetime), as datetimes out.
    _last_used: dict[str, float] = attrs.field(factory=dict)
    _admitted: dict[str, _Admitted] = attrs.field(factory=dict)
    # Scale-out: told of every change made here (the key's hash, and whether it is still
    # usable), so that other workers and nodes hear of it (`gateway.workers.key_events`).
    on_change: Callable[[str, bool], None] | None = None

    def load(self, records: Iterable[ApiKeyRecord]) -> None:
        self._by_hash = {record.key_hash: record for record in records}
        self._admitted = {}

    def put(self, record: ApiKeyRecord) -> None:
        """Add or replace a key (after create, patch or rotate)."""
        self._by_hash[record.key_hash] = record
        self._announce(record.key_hash, True)

    def forget(self, key_hash: str) -> None:
        self._by_hash.pop(key_hash, None)
        self._admitted.pop(key_hash, None)
        self._announce(key_hash, False)

    def forget_id(self, key_id: str) -> None:
        for key_hash, record in list(self._by_hash.items()):
            if record.id == key_id:
                del self._by_hash[key_hash]
                self._admitted.pop(key_hash, None)
                self._announce(key_hash, False)

    def apply(self, key_hash: str, record: ApiKeyRecord | None) -> None:
        """A change heard from another worker: hold `record`, or drop the key when None
        (not announced again)."""
        if record is None:
            self._by_hash.pop(key_hash, None)
            self._admitted.pop(key_hash, None)
        else:
            self._by_hash[key_hash] = record

    def _announce(self, key_hash: str, usable: bool) -> None:
        if self.on_change is not None:
            self.on_change(key_hash, usable)

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
        admitted = self._admitted.get(record.key_hash)
        if admitted is None or admitted[0] is not record:
            admitted = self._first_admission(record)
        _, principal, expires = admitted
        now = time.time()
        if now >= expires:
            raise invalid_api_key("This API key has been revoked or has expired.")
        if record.allowed_ips and not ip_allowed(record.allowed_ips, address):
            raise permission_denied("This API key may not be used from this address.")
        self._last_used[record.id] = now
        return principal

    def _first_admission(self, record: ApiKeyRecord) -> _Admitted:
        """What `admit` keeps of a record the first time it sees it; a key that is not
        active is refused (and not kept)."""
        if record.status != "active":
            raise invalid_api_key("This API key has been revoked or has expired.")
        expires = record.expires_at.timestamp() if record.expires_at else math.inf
        admitted = self._admitted[record.key_hash] = (record, Principal(record), expires)
        return admitted

    @property
    def pending_last_used(self) -> int:
        """Keys whose last use waits for the last-used worker (its queue, for /metrics)."""
        return len(self._last_used)

    def noted_use(self, key_id: str) -> datetime | None:
        """The key's last use noted here and not yet written to the store, if any."""
        used = self._last_used.get(key_id)
        return None if used is None else datetime.fromtimestamp(used, UTC)

    def take_last_used(self) -> dict[str, datetime]:
        """The last-use times gathered since the previous call (for a batched store write)."""
        taken, self._last_used = self._last_used, {}
        return {key_id: datetime.fromtimestamp(used, UTC) for key_id, used in taken.items()}
