"""Migration 11: agents."""

SCRIPT = """
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
