"""Migration 5: status."""

SCRIPT = """
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
