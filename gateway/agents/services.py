"""What the agents family (agents, their limits, alerts and MCP server) uses, built once
by the composition root."""

from __future__ import annotations

import attrs

from gateway.agents.book import AgentBook
from gateway.kernels.webhooks.services import Webhooks
from gateway.platform.auth import KeyRing
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.platform.resp import RedisClient
from store.db import Database


@attrs.frozen
class AgentsServices:
    db: Database
    settings: Settings
    auth: Authenticator
    keyring: KeyRing  # an agent's key joins and leaves it
    agents: AgentBook  # every agent seen, its limits and counters
    webhooks: Webhooks  # limit-warning alerts go out through it
    # Several processes: changes and counters are shared through it (None: one process).
    redis: RedisClient | None = None
