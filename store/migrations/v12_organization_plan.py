"""Migration 12: organization plan."""

SCRIPT = """
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
