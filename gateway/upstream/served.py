"""What the engine hands a family: the answer that won the race (`Served`, `Called`), and
the open stream whose end the engine accounts for (`Streaming`)."""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from gateway.platform.errors import ApiError, from_provider_error
from gateway.upstream.accounting import Accounting
from gateway.upstream.facts import RequestFacts
from gateway.upstream.limits import Hold
from gateway.upstream.resolve import Target
from providers.errors import ProviderError
from providers.types import Usage

if TYPE_CHECKING:
    from gateway.upstream.engine import Engine

T = TypeVar("T")
S = TypeVar("S")
CLIENT_LEFT = (499, "client_disconnected")


@attrs.frozen
class Served(Generic[T]):
    """What won the race: the target that served, its value and the chain's record."""

    target: Target
    value: T
    primary: Target
    attempts: tuple[Mapping[str, object], ...]
    retries: int  # tries beyond a candidate's first

    @property
    def fell_back(self) -> bool:
        return self.target is not self.primary and self.target != self.primary


@attrs.frozen
class Called(Served[T]):
    """A whole answer the engine served, with what it cost (`accounting`: priced,
    settled and recorded by the engine)."""

    accounting: Accounting


class Streaming(Generic[S]):
    """The open winner of `Engine.open_stream` and the end of its story (see there).

    `with Streaming(...) as stream:` is the open stream's block: whatever leaves it (an
    exception, a cancellation, the normal end), the stream's end is recorded once (a
    plain context manager: no generator per stream)."""

    def __init__(
        self, engine: Engine, facts: RequestFacts, hold: Hold | None, served: Served[S]
    ) -> None:
        self._engine, self._facts, self._hold = engine, facts, hold
        self.served = served
        self.metered = Usage()  # what the stream has used so far, as its family counts it
        self._ended = False

    def __enter__(self) -> Streaming[S]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.left(exc)

    @property
    def value(self) -> S:
        return self.served.value

    @property
    def target(self) -> Target:
        return self.served.target

    def price(self, usage: Usage) -> Accounting:
        """What `usage` costs on the serving target (for a final chunk's figures)."""
        return self._engine.price(self._facts, self.target, usage)

    def finished(self, usage: Usage) -> Accounting:
        """The stream ended well, having used `usage`: settled and recorded (200). Only
        the first end counts."""
        self.metered = usage
        if self._ended:
            return self.price(usage)
        self._ended = True
        return self._engine.served(self._facts, self.target, self._hold, usage)

    def failed(self, error: ProviderError | ApiError, usage: Usage | None = None) -> ApiError:
        """The stream broke after its first result (`error`, mapped to the spec's error
        the client is told in-band); settled with what it used and recorded."""
        mapped = from_provider_error(error) if isinstance(error, ProviderError) else error
        self._end(usage or self.metered, mapped.status, mapped.code)
        return mapped

    def left(self, exc: BaseException | None) -> None:
        """The block is left by `exc` (None: normally) without the family's word: the
        client went away (499), or the error that left it (a provider's failure mapped
        here to the spec's error). Nothing after an end."""
        if isinstance(exc, ProviderError):
            exc = from_provider_error(exc)
        if isinstance(exc, ApiError):
            self._end(self.metered, exc.status, exc.code)
        else:
            self._end(self.metered, *CLIENT_LEFT)

    def _end(self, usage: Usage, status: int, code: str) -> None:
        if self._ended:
            return
        self._ended = True
        engine, facts, target = self._engine, self._facts, self.target
        accounting = engine.price(facts, target, usage)
        if self._hold is not None:
            engine.settle(facts, target, self._hold, usage)
        engine.usage.record(facts, target, accounting, status=status, error_code=code)
