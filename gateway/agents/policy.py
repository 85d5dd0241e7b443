"""Agents' limits as an admission policy the composition root plugs into the core
(`gateway.upstream.admission`): a request of an agent's key is admitted under its
agent's limits (`gateway.agents.gate`) before its key's own, its expected usage priced at
the dearest candidate of its plan; any other key costs the policy one attribute check.
"""

from __future__ import annotations

import attrs

from gateway.agents.book import AgentBook
from gateway.agents.gate import admit_agent, estimate, suspended_error
from gateway.agents.hold import AgentShare
from gateway.platform.auth import Principal
from gateway.upstream.admission import Ask
from store.keys import ApiKeyRecord


@attrs.frozen
class AgentPolicy:
    """A `gateway.upstream.admission.AdmissionPolicy`."""

    book: AgentBook

    def claims(self, key: ApiKeyRecord) -> bool:
        return key.agent_id is not None

    async def admit(self, ask: Ask) -> AgentShare:
        """Reserve the request under its agent's limits, or raise the agent's 403/429."""
        principal = ask.principal
        agent_id = principal.key.agent_id
        assert agent_id is not None  # claimed
        models, capability = ask.candidates()
        amounts = estimate(ask.usage, models, capability)
        if ask.cost is not None:  # the caller knows the cost better than a plan could
            amounts = attrs.evolve(amounts, cost=ask.cost)
        reservation = await admit_agent(self.book, agent_id, principal.agent_session, amounts)
        return AgentShare(self.book, reservation, capability)

    async def precheck(self, principal: Principal) -> None:
        """A suspended (or deleted) agent is refused before its request's body is read."""
        agent_id = principal.key.agent_id
        assert agent_id is not None  # claimed
        loaded = await self.book.get(agent_id)
        if loaded is not None and loaded.record.status == "suspended":
            raise suspended_error(loaded)
