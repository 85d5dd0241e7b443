"""What an agent's request holds: its key's hold plus its reservation under the agent's
limits, given back or settled together.

`charge` replaces the reservation by what the request really spent on the model that
served it (`gateway.upstream.admission.settle` calls it); a request released without a
charge (it failed before an answer, or was answered from the cache) is charged nothing.
Either way the session's slot comes back and the alert worker is told.
"""

from __future__ import annotations

from types import TracebackType

import attrs

from gateway.agents.book import AgentBook
from gateway.agents.counters import Amounts, Reservation
from gateway.agents.gate import spent
from gateway.upstream.limits import Hold
from providers.catalog import ModelInfo
from providers.types import Usage


@attrs.define(eq=False)
class AgentHold:
    inner: Hold
    book: AgentBook
    reservation: Reservation
    capability: str

    @property
    def released(self) -> bool:
        return self.inner.released

    def headers(self) -> dict[str, str]:
        return self.inner.headers()

    def settle(self, usage: Usage) -> None:
        self.inner.settle(usage)

    def charge(self, model: ModelInfo | None, usage: Usage) -> None:
        """Charge the agent what `usage` cost on `model` (only the first call counts)."""
        self._finish(spent(usage, model, self.capability))

    def release(self) -> None:
        self.inner.release()
        self._finish(Amounts())

    def _finish(self, amounts: Amounts) -> None:
        if self.reservation.done:
            return
        self.book.settle(self.reservation, amounts)
        self.book.notify(self.reservation.agent_id, self.reservation.session)

    def __enter__(self) -> AgentHold:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
