"""Migration 6: organizations."""

SCRIPT = """
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
