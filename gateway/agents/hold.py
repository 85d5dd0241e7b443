"""An agent's share of one request, held from admission to the request's end.

`charge` replaces the reservation by what the request really spent on the model that
served it (the engine's settlement calls it, `gateway.upstream.engine.Engine.settle`); a
request released without a charge (it failed before an answer, or was answered from the
cache) is charged nothing. Either way the session's slot comes back and the alert worker
is told.
"""

from __future__ import annotations

import attrs

from gateway.agents.book import AgentBook
from gateway.agents.counters import Amounts, Reservation
from gateway.agents.gate import spent
from providers.catalog import ModelInfo
from providers.types import Usage


@attrs.define(eq=False)
class AgentShare:
    """A `gateway.upstream.admission.PolicyHold`."""

    book: AgentBook
    reservation: Reservation
    capability: str

    def charge(self, model: ModelInfo | None, usage: Usage) -> None:
        """Charge the agent what `usage` cost on `model` (only the first call counts)."""
        self._finish(spent(usage, model, self.capability))

    def release(self) -> None:
        self._finish(Amounts())

    def _finish(self, amounts: Amounts) -> None:
        if self.reservation.done:
            return
        self.book.settle(self.reservation, amounts)
        self.book.notify(self.reservation.agent_id, self.reservation.session)
