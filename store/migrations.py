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

_V5_STATUS = """
-- Incidents: opened by the incident monitor from provider health or by operators; kept
-- after resolution, since SLA credits are computed from their history.
CREATE TABLE incidents (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    severity TEXT NOT NULL CHECK (severity IN ('critical', 'major', 'minor', 'maintenance')),
    affected_services TEXT NOT NULL DEFAULT '[]',
    message TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL CHECK (source IN ('monitor', 'operator')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    resolved_at TEXT,
    started_epoch REAL NOT NULL,
    resolved_epoch REAL
);
CREATE INDEX incidents_by_workspace_time ON incidents (workspace_id, started_epoch);
CREATE INDEX incidents_open ON incidents (workspace_id, resolved_epoch);

CREATE TABLE incident_updates (
    incident_id TEXT NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    severity TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX incident_updates_by_incident ON incident_updates (incident_id, created_at);

CREATE TABLE status_webhooks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    encrypted_secret TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX status_webhooks_by_workspace ON status_webhooks (workspace_id, created_at);

-- One row per notification sent to a URL (status webhook or alert), with its attempts.
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    source_kind TEXT NOT NULL CHECK (source_kind IN ('status_webhook', 'alert')),
    source_id TEXT NOT NULL,
    event TEXT NOT NULL,
    url TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'dropped')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    delivered_at TEXT
);
CREATE INDEX webhook_deliveries_by_source ON webhook_deliveries (source_id, created_at);

CREATE TABLE alerts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    metric TEXT NOT NULL,
    operator TEXT NOT NULL,
    threshold REAL NOT NULL,
    window_minutes INTEGER NOT NULL,
    notify_email TEXT NOT NULL DEFAULT '[]',
    notify_webhook TEXT,
    encrypted_secret TEXT,
    state TEXT NOT NULL CHECK (state IN ('ok', 'firing')),
    last_value REAL,
    last_evaluated_at TEXT,
    last_changed_at TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX alerts_by_workspace ON alerts (workspace_id, created_at);

CREATE TABLE alert_events (
    alert_id TEXT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('triggered', 'resolved')),
    value REAL,
    email_status TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX alert_events_by_alert ON alert_events (alert_id, created_at);

CREATE TABLE sla_credit_requests (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    period TEXT NOT NULL,
    incident_ids TEXT NOT NULL,
    description TEXT NOT NULL,
    plan TEXT NOT NULL,
    sla_target REAL,
    measured_uptime REAL NOT NULL,
    downtime_minutes REAL NOT NULL,
    credit_percent REAL NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX sla_credit_requests_by_workspace ON sla_credit_requests (workspace_id, created_at);
"""

_V6_ORGANIZATIONS = """
-- Organisations own workspaces; existing data moves into the default organisation.
CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL
);
INSERT INTO organizations (id, name, created_at)
VALUES ('org_default', 'Default', strftime('%Y-%m-%dT%H:%M:%f000+00:00', 'now'));
-- (SQLite refuses REFERENCES on an added column with a default; the store keeps it right.)
ALTER TABLE workspaces ADD COLUMN organization_id TEXT NOT NULL DEFAULT 'org_default';
CREATE INDEX workspaces_by_organization ON workspaces (organization_id, created_at);

-- A person, across organisations; the password is an Argon2id hash, NULL until an
-- invitation is accepted.
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT,
    created_at TEXT NOT NULL
);

-- Membership of a user in an organisation: invited (with the SHA-256 of a one-time
-- invitation token) until accepted, then active. `workspaces` is a JSON array of ids.
CREATE TABLE members (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id),
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    status TEXT NOT NULL CHECK (status IN ('invited', 'active')),
    workspaces TEXT NOT NULL DEFAULT '[]',
    invitation_hash TEXT UNIQUE,
    invitation_expires_at TEXT,
    created_at TEXT NOT NULL,
    joined_at TEXT,
    UNIQUE (organization_id, user_id)
);

-- Short-lived user access tokens, stored as SHA-256 digests.
CREATE TABLE user_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    revoked_at TEXT
);

CREATE TABLE service_accounts (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    workspaces TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL
);

-- A service account's key carries its role and workspace scope, so the key ring resolves
-- them when the key is loaded, not per request.
ALTER TABLE api_keys ADD COLUMN role TEXT;
ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT '[]';
ALTER TABLE api_keys ADD COLUMN service_account_id TEXT
    REFERENCES service_accounts (id) ON DELETE CASCADE;

ALTER TABLE audit_events ADD COLUMN organization_id TEXT NOT NULL DEFAULT 'org_default';
CREATE INDEX audit_by_organization ON audit_events (organization_id, timestamp);
"""

_V7_FILES = """
-- Uploaded files (issue 12). The bytes live in the content-addressed blob store
-- (store/blobs.py) under `sha256`; a blob is removed when no file row names it any more.
CREATE TABLE files (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- The uploading key: processing (embeddings) is done and accounted in its name.
    key_id TEXT NOT NULL,
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_type TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('uploaded', 'processing', 'processed', 'error')),
    status_details TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    options TEXT NOT NULL DEFAULT '{}',
    collection TEXT,
    process_id TEXT,
    started_at INTEGER,
    completed_at INTEGER,
    duration_ms INTEGER,
    stages TEXT NOT NULL DEFAULT '{}',
    results TEXT NOT NULL DEFAULT '{}',
    language TEXT
);
CREATE INDEX files_by_workspace ON files (workspace_id, created_at, id);
CREATE INDEX files_by_sha256 ON files (sha256);
CREATE INDEX files_by_status ON files (status);

CREATE TABLE file_pages (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (file_id, number)
);

CREATE TABLE file_chunks (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    page INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    embedding_id TEXT,
    PRIMARY KEY (file_id, idx)
);

-- Vectors as little-endian float32 blobs, searched exactly (see store/files.py).
CREATE TABLE file_vectors (
    id TEXT PRIMARY KEY,
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    chunk_idx INTEGER NOT NULL,
    collection TEXT,
    model TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX file_vectors_by_file ON file_vectors (file_id);
CREATE INDEX file_vectors_by_collection ON file_vectors (collection, model);

CREATE TABLE file_pii (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    type TEXT NOT NULL,
    text TEXT NOT NULL,
    page INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    confidence REAL NOT NULL,
    redacted INTEGER NOT NULL,
    PRIMARY KEY (file_id, idx)
);
"""

_V8_VOICE_MAPPINGS = """
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

_V9_PROMPT_HASH = """
-- The sustainability reports find repeated identical chat requests (a caching opportunity)
-- from the chat cache key of each request, recorded whether or not the cache was on.
-- Other endpoints, and rows written before this version, read NULL.
ALTER TABLE usage_records ADD COLUMN prompt_hash TEXT;
"""

_V10_DATA_DOCUMENTS = """
-- Data documents for retrieval (gateway.documents): the document, its chunks with their
-- float32 vectors, and an FTS5 index over the chunks' text (external content: the text is
-- stored once, in data_chunks). `expires_at` (Unix seconds) is set from `retention_days`;
-- the retention worker erases what is past it.
CREATE TABLE data_documents (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    key_id TEXT NOT NULL,
    name TEXT NOT NULL,
    original_filename TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    kind TEXT NOT NULL,
    file_size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    data_classification TEXT NOT NULL,
    chunking_strategy TEXT NOT NULL,
    chunk_size_tokens INTEGER NOT NULL,
    chunk_overlap_tokens INTEGER NOT NULL,
    residency_region TEXT NOT NULL,
    retention_days INTEGER,
    expires_at REAL,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL,
    error_message TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    embedding_model TEXT,
    embedding_provider TEXT,
    processing_time_seconds REAL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX data_documents_by_workspace ON data_documents (workspace_id, created_at, id);
CREATE INDEX data_documents_by_expiry ON data_documents (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE data_chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES data_documents (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    content TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    page_number INTEGER NOT NULL,
    section_header TEXT,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    vector BLOB,
    UNIQUE (document_id, chunk_index)
);
CREATE INDEX data_chunks_by_workspace ON data_chunks (workspace_id);
CREATE VIRTUAL TABLE data_chunks_fts USING fts5(
    content, content = 'data_chunks', content_rowid = 'id'
);
"""

_V11_AGENTS = """
-- Agents (gateway.agents): automated callers with their own key (api_keys.agent_id), limits
-- that may only lower their organisation's (organizations.agent_limits, NULL: the defaults),
-- a suspension state, and limit-warning alerts. A threshold fires once per limit period:
-- the firing row's primary key is that promise, kept across restarts.
ALTER TABLE api_keys ADD COLUMN agent_id TEXT;
ALTER TABLE organizations ADD COLUMN agent_limits TEXT;
CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_id TEXT NOT NULL,
    tools TEXT NOT NULL DEFAULT '[]',
    limits TEXT NOT NULL DEFAULT '{}',
    template TEXT,
    auto_suspend TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
    suspended_reason TEXT,
    suspended_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX agents_by_workspace ON agents (workspace_id, created_at);
CREATE TABLE agent_alerts (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    thresholds TEXT NOT NULL,
    webhook_url TEXT NOT NULL,
    encrypted_secret TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX agent_alerts_by_agent ON agent_alerts (agent_id);
CREATE TABLE agent_alert_firings (
    alert_id TEXT NOT NULL REFERENCES agent_alerts (id) ON DELETE CASCADE,
    limit_type TEXT NOT NULL,
    threshold REAL NOT NULL,
    period TEXT NOT NULL,
    fired_at TEXT NOT NULL,
    PRIMARY KEY (alert_id, limit_type, threshold, period)
);
"""

_V12_ORGANIZATION_PLAN = """
-- The organisation's plan (free, pro, enterprise): the SLA its credit requests are
-- measured against (gateway.status.sla). Organisations created from now on start on Free
-- until their owner sets the plan; those that existed were assessed on Pro terms (every
-- non-development key's request was) and keep them.
ALTER TABLE organizations ADD COLUMN plan TEXT NOT NULL DEFAULT 'free'
    CHECK (plan IN ('free', 'pro', 'enterprise'));
UPDATE organizations SET plan = 'pro';

-- The deliveries still to make, which the delivery worker resumes at start.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (created_at)
    WHERE status = 'pending';
"""

_V13_PIPELINE_TEMPLATES = """
-- A workspace's custom pipeline templates (gateway.pipelines): stage settings kept as one
-- JSON object (stt, llm, tts) beside the name, unique within a workspace.
CREATE TABLE pipeline_templates (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    stages TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (workspace_id, name)
);
"""

_V14_ANALYTICS = """
-- Analytics (issue 15). A cache hit records what it saved at list prices, beside the zero
-- it was billed.
ALTER TABLE usage_records ADD COLUMN cache_savings_usd REAL NOT NULL DEFAULT 0;

-- Rollups kept by the usage writer in the same transaction as the raw rows
-- (store.usage_rollups): one row per hour (start_epoch), workspace, key, model, provider
-- and endpoint,
-- so the analytics pages read a few thousand rows whatever the history's length.
-- Outcomes: success (< 400), rate_limit (429), timeout (504 or provider_timeout),
-- provider_error (other >= 500), invalid_request (other 4xx). Latency sums cover successes.
CREATE TABLE usage_rollups (
    workspace_id TEXT NOT NULL,
    start_epoch INTEGER NOT NULL,
    key_id TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    rate_limit_hits INTEGER NOT NULL DEFAULT 0,
    timeouts INTEGER NOT NULL DEFAULT 0,
    provider_errors INTEGER NOT NULL DEFAULT 0,
    invalid_requests INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    cache_tokens_saved INTEGER NOT NULL DEFAULT 0,
    cache_savings_usd REAL NOT NULL DEFAULT 0,
    latency_sum_ms REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, start_epoch, key_id, model, provider, endpoint)
) WITHOUT ROWID;
-- The same sums per UTC day: periods are whole days, so every page but an hourly series
-- reads 24 times fewer rows here.
CREATE TABLE usage_rollups_daily (
    workspace_id TEXT NOT NULL,
    start_epoch INTEGER NOT NULL,
    key_id TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    rate_limit_hits INTEGER NOT NULL DEFAULT 0,
    timeouts INTEGER NOT NULL DEFAULT 0,
    provider_errors INTEGER NOT NULL DEFAULT 0,
    invalid_requests INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    cache_tokens_saved INTEGER NOT NULL DEFAULT 0,
    cache_savings_usd REAL NOT NULL DEFAULT 0,
    latency_sum_ms REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, start_epoch, key_id, model, provider, endpoint)
) WITHOUT ROWID;

-- Latency of successful requests as a mergeable log-bucketed sketch (DDSketch, relative
-- accuracy 1%: bucket i holds (gamma^(i-1), gamma^i], gamma = 1.01/0.99), per UTC day,
-- workspace and provider. Bucket -1000000 holds latencies of 0 ms.
CREATE TABLE usage_latency_sketch (
    workspace_id TEXT NOT NULL,
    day_epoch INTEGER NOT NULL,
    provider TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, day_epoch, provider, bucket)
) WITHOUT ROWID;

INSERT INTO usage_rollups
SELECT workspace_id, CAST(created_epoch / 3600 AS INTEGER) * 3600, key_id, model, provider,
       endpoint, count(*), sum(status < 400), sum(status = 429),
       sum(status <> 429 AND (status = 504 OR coalesce(error_code, '') = 'provider_timeout')),
       sum(status >= 500 AND status <> 504 AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(status >= 400 AND status < 500 AND status <> 429
           AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd), sum(cache_hit),
       sum(CASE WHEN cache_hit THEN prompt_tokens + completion_tokens ELSE 0 END),
       sum(cache_savings_usd), sum(CASE WHEN status < 400 THEN latency_ms ELSE 0 END)
FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6;

INSERT INTO usage_rollups_daily
SELECT workspace_id, CAST(created_epoch / 86400 AS INTEGER) * 86400, key_id, model, provider,
       endpoint, count(*), sum(status < 400), sum(status = 429),
       sum(status <> 429 AND (status = 504 OR coalesce(error_code, '') = 'provider_timeout')),
       sum(status >= 500 AND status <> 504 AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(status >= 400 AND status < 500 AND status <> 429
           AND coalesce(error_code, '') <> 'provider_timeout'),
       sum(prompt_tokens), sum(completion_tokens), sum(cost_usd), sum(cache_hit),
       sum(CASE WHEN cache_hit THEN prompt_tokens + completion_tokens ELSE 0 END),
       sum(cache_savings_usd), sum(CASE WHEN status < 400 THEN latency_ms ELSE 0 END)
FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6;

INSERT INTO usage_latency_sketch
SELECT workspace_id, CAST(created_epoch / 86400 AS INTEGER) * 86400, provider,
       CASE WHEN latency_ms > 0
            THEN CAST(ceil(ln(latency_ms) / 0.020000666706669435) AS INTEGER)
            ELSE -1000000 END,
       count(*)
FROM usage_records WHERE status < 400 GROUP BY 1, 2, 3, 4;

-- Analytics exports (gateway.analytics.exports): built by a worker into a file under the
-- data directory, downloadable by the same workspace until `expires_at`.
CREATE TABLE analytics_exports (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('processing', 'complete', 'failed', 'expired')),
    format TEXT NOT NULL,
    include TEXT NOT NULL,
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL,
    created_at TEXT NOT NULL,
    completed_at TEXT,
    expires_at TEXT,
    expires_epoch REAL,
    file_name TEXT,
    rows INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0,
    error TEXT
);
CREATE INDEX analytics_exports_by_status ON analytics_exports (status, expires_epoch);
"""

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, _V1_INITIAL),
    (2, _V2_ROUTING_RULES),
    (3, _V3_USAGE_BY_KEY_ENDPOINT),
    (4, _V4_METERED_USAGE),
    (5, _V5_STATUS),
    (6, _V6_ORGANIZATIONS),
    (7, _V7_FILES),
    (8, _V8_VOICE_MAPPINGS),
    (9, _V9_PROMPT_HASH),
    (10, _V10_DATA_DOCUMENTS),
    (11, _V11_AGENTS),
    (12, _V12_ORGANIZATION_PLAN),
    (13, _V13_PIPELINE_TEMPLATES),
    (14, _V14_ANALYTICS),
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
