"""What the agents' management routes do beyond checking and rendering: an agent is made
with its own API key (minted here, shown once), and deleted with it.

Each change is stored with its audit event in one transaction, then reaches the key ring
and the agent book in memory before the answer is sent.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import attrs

from gateway.agents.book import Loaded
from gateway.agents.input import AgentSpec
from gateway.agents.services import AgentsServices
from gateway.platform.audit import audit_event, audited, written
from gateway.platform.auth import Principal
from store import agents as agent_store
from store import keys
from store.agents import AgentRecord
from store.keys import ApiKeyRecord

AGENT_KEY_PREFIX = "gw_agent_"
AGENT_PERMISSIONS = ("chat", "embeddings", "audio", "files", "models")


async def create_agent(
    services: AgentsServices, principal: Principal, spec: AgentSpec
) -> tuple[Loaded, ApiKeyRecord, str]:
    """Make the agent in the caller's workspace with its key; returns it loaded, its key's
    record and the full key (the only time it is known)."""
    now = datetime.now(UTC)
    full_key = AGENT_KEY_PREFIX + secrets.token_urlsafe(30)
    agent_id = agent_store.new_agent_id()
    key = keys.new_record(
        full_key,
        workspace_id=principal.workspace_id,
        name=f"agent {spec.name}",
        kind="prod",
        permissions=AGENT_PERMISSIONS,
        now=now,
        organization_id=principal.organization_id,
        agent_id=agent_id,
    )
    key = attrs.evolve(key, prefix=AGENT_KEY_PREFIX)
    record = AgentRecord(
        id=agent_id,
        organization_id=principal.organization_id,
        workspace_id=principal.workspace_id,
        name=spec.name,
        key_id=key.id,
        tools=spec.tools,
        limits=spec.limits,
        template=spec.template,
        auto_suspend=spec.auto_suspend,
        created_at=now,
        updated_at=now,
    )
    event = audit_event(
        principal,
        "agent.created",
        target_type="agent",
        target_id=agent_id,
        details={"name": spec.name, "template": spec.template},
    )
    await audited(services.db, event, written(lambda d: agent_store.insert(d, record, key)))
    services.keyring.put(key)
    return await services.agents.refresh(record), key, full_key


async def delete_agent(services: AgentsServices, principal: Principal, agent_id: str) -> bool:
    """Delete the agent and its key (False: no such agent in the caller's workspace)."""
    ws = principal.workspace_id
    event = audit_event(principal, "agent.deleted", target_type="agent", target_id=agent_id)
    key_hash = await audited(services.db, event, lambda d: agent_store.delete(d, agent_id, ws))
    if key_hash is None:
        return False
    services.keyring.forget(key_hash)
    services.agents.forget(agent_id)
    return True
