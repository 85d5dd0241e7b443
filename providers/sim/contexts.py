"""A request's own `SimContext`: the server's, with one thing changed for that request.

`OneRequestFault` applies the fault of an `x-sim-fault` header (once); `Recording` remembers
the fault the handler took, for the faults the server applies itself once the handler has
answered (`reset`, `malformed`). Both forward everything else to the context they wrap.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

from providers.sim.audio import SimAudio
from providers.sim.core import Fault, SimContext
from providers.sim.faults import FaultBook


class Forwarding(SimContext):
    """Everything asked of the context it wraps; a subclass changes what it must."""

    def __init__(self, inner: SimContext) -> None:
        self._inner = inner

    def reply_tokens(
        self, prompt: str, max_tokens: int | None, schema: Mapping[str, Any] | None = None
    ) -> list[str]:
        return self._inner.reply_tokens(prompt, max_tokens, schema)

    def fault(self, model: str, vendor: str) -> Fault | None:
        return self._inner.fault(model, vendor)

    def pace(self, tokens: list[str], fault: Fault | None) -> AsyncGenerator[list[str], None]:
        return self._inner.pace(tokens, fault)

    async def pace_whole(self, tokens: list[str], fault: Fault | None) -> None:
        await self._inner.pace_whole(tokens, fault)

    def next_transcript(self) -> str | None:
        return self._inner.next_transcript()

    def audio(self) -> SimAudio:
        return self._inner.audio()


class OneRequestFault(Forwarding):
    """The server's context with the fault of an `x-sim-fault` header for one request
    (`faults` the server's book: its draws decide whether a fault with a `probability`
    fires)."""

    def __init__(self, inner: SimContext, faults: FaultBook, fault: Fault) -> None:
        super().__init__(inner)
        self._faults = faults
        self._fault = fault

    def fault(self, model: str, vendor: str) -> Fault | None:
        return self._fault if self._faults.fires_once(self._fault) else None


class Recording(Forwarding):
    """A request's context that remembers the fault the handler took."""

    def __init__(self, inner: SimContext) -> None:
        super().__init__(inner)
        self.taken: Fault | None = None

    def fault(self, model: str, vendor: str) -> Fault | None:
        taken = self._inner.fault(model, vendor)
        if taken is not None:
            self.taken = taken
        return taken
