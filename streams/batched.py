"""A stream handed out a network read's worth at a time, or one item at a time.

An upstream's read often completes many events at once (an unpaced chat stream's 20
chunks arrive in one or two reads). A consumer that writes them to a client wants them
together: one write for the lot, with no task between the socket and itself to gather
them (a read-ahead task and its channel cost a nursery, a task and two scheduler round
trips per read). `Batched` is that stream: `next_batch()` gives every item of the next
read (an empty list once the stream has ended), while `async for` still gives items
one by one to a consumer that wants them so (the first result of a race, a voice turn).

When the whole upstream answer has arrived (its producer says so), the rest can be read
to its end without waiting (`in_hand`), so a consumer may take it all at once and send
the lot in one write; while any of it is still to come, nothing in hand waits for it.

A producer may hand a plain text piece as the `str` itself rather than as an item (the
OpenAI protocol's text deltas, most of a chat stream): `lift` makes the item of it for a
consumer that reads items (`next_batch`, `async for`), while the chat door's byte relay
takes the read as it is (`next_read`) and renders the text without an item made for it.

It is a plain object over an async generator of lists, which its owner closes (under
`contextlib.aclosing`, where the stream was opened); `Batched` itself holds nothing that
needs closing.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, TypeVar, cast

from streams.sse import SSEEvent

T = TypeVar("T")


class Batched(Generic[T]):
    """The items of `batches` (each list never empty), a read's worth or one at a time.

    Items taken one by one leave the rest of their batch pending: the next
    `next_batch()` returns those first, so nothing is lost or reordered between the two
    ways of reading.

    Cancellation: a cancelled `next_batch()` or `__anext__` is a cancelled read of the
    generator underneath, which ends it (as cancelling any async generator's step does).
    """

    __slots__ = ("_arrived", "_batches", "_lift", "_pending")

    def __init__(
        self,
        batches: AsyncGenerator[list[T | str], None] | AsyncGenerator[list[T], None],
        arrived: Callable[[], bool] = lambda: False,
        lift: Callable[[str], T] | None = None,
    ) -> None:
        """`lift` makes an item of a text piece; a producer without it hands no `str`
        (and `T` is never `str` itself)."""
        self._batches = cast(AsyncGenerator[list[T | str], None], batches)
        self._arrived = arrived
        self._lift = lift
        self._pending: list[T | str] = []

    @property
    def in_hand(self) -> bool:
        """The next `next_batch()` will not wait: items are pending, or the producer's
        source has ended (`arrived()`, its word), so the rest is in memory."""
        return bool(self._pending) or self._arrived()

    async def next_batch(self) -> list[T]:
        """Every item of the next read (first those left over by `__anext__`); [] at
        the end. Errors of the stream underneath are raised as they are."""
        return self._lifted(await self.next_read())

    async def next_read(self) -> list[T | str]:
        """`next_batch` with text pieces left as the `str`s they came as."""
        if self._pending:
            pending, self._pending = self._pending, []
            return pending
        try:
            return await self._batches.__anext__()
        except StopAsyncIteration:
            return []

    def _lifted(self, read: list[T | str]) -> list[T]:
        lift = self._lift
        if lift is None:
            return cast(list[T], read)
        return [lift(item) if type(item) is str else cast(T, item) for item in read]

    def __aiter__(self) -> Batched[T]:
        return self

    async def __anext__(self) -> T:
        if not self._pending:
            self._pending = await self.next_read()
            if not self._pending:
                raise StopAsyncIteration
        pending = self._pending
        item = pending[0]
        self._pending = pending[1:]
        lift = self._lift
        return lift(item) if lift is not None and type(item) is str else cast(T, item)

    async def aclose(self) -> None:
        """Close the generator underneath (idempotent)."""
        self._pending = []
        await self._batches.aclose()


class FailureHeld(Generic[T]):
    """A vendor's stream read event by event (`providers.http.EventReader`), for a vendor
    that ends its transfer right after an error event (Anthropic's, Gemini's): the first
    failure of the `held` kind `feed` raises is kept, nothing after it is read, and it is
    raised at the end, once the transfer has ended, so that the connection is left
    clean. The chunks before it are still the client's.

    A vendor's reader says how an event becomes data (`decode`: None for one with nothing
    to read; what it raises, such as an event that is not JSON, is raised at once), what
    data gives (`feed`), and what the stream's end gives (`close`).
    """

    def __init__(self, held: type[Exception]) -> None:
        self._held = held
        self._failure: Exception | None = None

    def read(self, event: SSEEvent) -> list[T]:
        data = self.decode(event)
        if self._failure is not None or data is None:
            return []
        try:
            return self.feed(data)
        except self._held as exc:
            self._failure = exc
            return []

    def end(self) -> list[T]:
        if self._failure is not None:
            raise self._failure
        return self.close()

    def decode(self, event: SSEEvent) -> dict[str, Any] | None:
        raise NotImplementedError

    def feed(self, data: dict[str, Any]) -> list[T]:
        raise NotImplementedError

    def close(self) -> list[T]:
        return []
