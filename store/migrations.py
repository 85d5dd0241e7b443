"""Numbered schema migrations, applied in order when the database opens.

Each migration is a SQL script with a version number. The versions already applied are
recorded in `schema_migrations`; opening a database applies only the missing ones, each
in its own transaction together with its bookkeeping row, so a crash mid-migration leaves
the previous version intact. Migrations are append-only: never edit a released one, add a
new version instead.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlite_utils

from store.columns import to_iso

_V1_INITIAL = """
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
INSERT INTO workspaces (id, name, description, created_at)
VALUES ('default', 'Default', 'Default workspace',
        strftime('%Y-%m-%dT%H:%M:%f000+00:00', 'now'));

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('dev', 'prod', 'admin', 'tenant')),
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    last_four TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    permissions TEXT NOT NULL DEFAULT '[]',
    rate_limits TEXT NOT NULL DEFAULT '{}',
    allowed_models TEXT NOT NULL DEFAULT '[]',
    allowed_ips TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_used_at TEXT,
    expires_at TEXT,
    revoked_at TEXT,
    rotated_from TEXT
);
CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, created_at);
CREATE INDEX api_keys_by_status ON api_keys (status);

CREATE TABLE providers (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'disabled')),
    encrypted_credentials TEXT NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    configured_at TEXT NOT NULL,
    credentials_updated_at TEXT,
    disabled_at TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, provider_id)
);

-- Usage outlives the keys and workspaces it mentions (history), hence no foreign keys.
CREATE TABLE usage_records (
    request_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    latency_ms REAL NOT NULL,
    energy_kwh REAL NOT NULL,
    carbon_gco2e REAL NOT NULL,
    status INTEGER NOT NULL,
    error_code TEXT,
    cache_hit INTEGER NOT NULL CHECK (cache_hit IN (0, 1)),
    project TEXT,
    team TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    created_epoch REAL NOT NULL
);
CREATE INDEX usage_by_key_time ON usage_records (key_id, created_epoch);
CREATE INDEX usage_by_workspace_time ON usage_records (workspace_id, created_epoch);
CREATE INDEX usage_by_workspace_provider_time
    ON usage_records (workspace_id, provider, created_epoch);
CREATE INDEX usage_by_request ON usage_records (request_id);

CREATE TABLE audit_events (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    type TEXT NOT NULL,
    actor_id TEXT,
    actor_email TEXT,
    target_type TEXT,
    target_id TEXT,
    target_email TEXT,
    ip_address TEXT,
    timestamp TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_by_workspace_time ON audit_events (workspace_id, timestamp);
"""

_V2_ROUTING_RULES = """
CREATE TABLE routing_rules (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    priority INTEGER NOT NULL,
    enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    conditions TEXT NOT NULL DEFAULT '{}',
    actions TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX routing_rules_by_workspace ON routing_rules (workspace_id, priority, created_at);
-- Two enabled rules of a workspace never share a priority; disabled rules may.
CREATE UNIQUE INDEX routing_rules_enabled_priority
    ON routing_rules (workspace_id, priority) WHERE enabled = 1;
"""

_V3_USAGE_BY_KEY_ENDPOINT = """
-- The daily and monthly limits count a key's requests to the endpoints the limiter
-- admits; a month of a busy key's rows is counted from this index alone.
CREATE INDEX usage_by_key_endpoint_time ON usage_records (key_id, endpoint, created_epoch);
"""

_V4_METERED_USAGE = """
-- Usage is metered in every unit a family bills (providers.types.Usage): seconds of audio,
-- characters, pages, search units and bytes stored, beside the tokens. Existing rows read
-- as zero in the new columns.
ALTER TABLE usage_records ADD COLUMN audio_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN characters INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN pages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN searches INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN bytes_stored INTEGER NOT NULL DEFAULT 0;
"""

_V5_VOICE_MAPPINGS = """
-- A workspace's custom voices: a name usable wherever a `voice` is, mapped to one voice
-- id per provider (gateway.audio.voices). Names are unique within a workspace.
CREATE TABLE voice_mappings (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    mappings TEXT NOT NULL DEFAULT '{}',
    default_settings TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (workspace_id, name)
);
"""

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, _V1_INITIAL),
    (2, _V2_ROUTING_RULES),
    (3, _V3_USAGE_BY_KEY_ENDPOINT),
    (4, _V4_METERED_USAGE),
    (5, _V5_VOICE_MAPPINGS),
)
"""(version, SQL script) pairs, versions strictly increasing from 1."""

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
)
"""


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer version of the gateway than this one."""


def current_version(db: sqlite_utils.Database) -> int:
    """The highest applied migration version, 0 for a fresh database."""
    db.execute(_BOOKKEEPING)
    row = db.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def apply_migrations(
    db: sqlite_utils.Database,
    migrations: tuple[tuple[int, str], ...] = MIGRATIONS,
) -> list[int]:
    """Apply the migrations not yet recorded; return the versions applied now.

    Idempotent: a second call on the same database applies nothing.
    """
    _check_ordering(migrations)
    applied_up_to = current_version(db)
    known = migrations[-1][0] if migrations else 0
    if applied_up_to > known:
        raise SchemaTooNewError(
            f"database schema is at version {applied_up_to}, this code knows up to {known}"
        )
    applied: list[int] = []
    for version, script in migrations:
        if version <= applied_up_to:
            continue
        with db.atomic():
            db.executescript(script)
            db.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                [version, to_iso(datetime.now(UTC))],
            )
        applied.append(version)
    return applied


def _check_ordering(migrations: tuple[tuple[int, str], ...]) -> None:
    versions = [version for version, _ in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migration versions must be 1, 2, 3, ... in order, got {versions}")
