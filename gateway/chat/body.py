"""A streamed chat answer as a response body (`gateway.platform.body.StreamBody`).

Each write to the client takes every chunk of an upstream read, so a burst of upstream
events (one network read often carries many) goes out as one write instead of one per
event. A `streams.batched.Batched` stream (the OpenAI protocol's) hands a read's chunks
out together and is read in the writer's own task; any other chunk iterator is read by a
read-ahead task (owned by the body's `open()`: started on entry, cancelled on exit) into
a small bounded channel, from which each write takes every chunk already there.

The chat service opens the upstream stream (the engine's race) and waits for its first
chunk *before* answering, so a failure to start is an ordinary HTTP error (never a 200
followed by an error); the race stays open in the service's answering context, which
outlives the body. The server enters the body (`async with body.open()`), iterates it,
and exits it on every path; the exit stops the reader and closes the chunk iterator, and
the answering context then closes the upstream response. A client disconnect cancels the
iteration, which is how the upstream learns at once that nobody listens.

How the stream ended is the engine's to account for (`Tab`, which
`gateway.upstream.engine.Streaming` is): the final chunk's figures come from `tab.finished`
(priced, settled and recorded there), a failure after the head is mapped by `tab.failed`,
and a client that left leaves what was sent so far in `tab.metered`.

The lifecycle is a small state table rather than a set of flags:

    STREAMING --upstream ended-------------> DONE (final frames queued)
    STREAMING --upstream failed / timeout--> FAILED (one error event) -> DONE
    any       --exit before DONE (client went away)---------------------> ABANDONED
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

import attrs
import trio

from gateway.chat.cache import StreamAssembler
from gateway.chat.dialect import ChatCompletionFrames
from gateway.chat.trip import Trip
from gateway.kernels.dialects import Frames
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import Accounting
from providers.errors import ProviderError, UpstreamTimeout
from providers.types import ChatChunk, Usage
from streams.batched import Batched
from streams.held import background

CLEANUP_DEADLINE_S = 2.0
READ_AHEAD = 64  # chunks buffered between the upstream and the client, at most
SILENCE_SLACK_S = 0.05  # how much later than its idle timeout a silent upstream may be noticed


class StreamState(enum.Enum):
    STREAMING = "streaming"
    DONE = "done"
    FAILED = "failed"
    ABANDONED = "abandoned"


@attrs.frozen
class StreamOutcome:
    """How a stream ended, for the usage log."""

    state: StreamState
    usage: Usage | None
    completion_chars: int
    error: ApiError | None
    tools_called: tuple[str, ...]
    accounting: Accounting | None = None  # what the final chunk reported (DONE only)


Item = ChatChunk | ProviderError  # what the read-ahead hands over
Measure = Callable[[Usage | None, int], Usage]  # reported usage (if any), chars sent
Finisher = Callable[[StreamOutcome], None]


class Tab(Protocol):
    """Where the body says how its stream ended (see the module docstring)."""

    metered: Usage

    def finished(self, usage: Usage) -> Accounting: ...

    def failed(self, error: ProviderError) -> ApiError: ...


class ChatStreamBody:
    """The body of one streamed chat answer: a `StreamBody` whose frames are the
    dialect's (`frames`; chat-completion chunks ending with `[DONE]` by default), ending
    with its final frames or one error event."""

    # The read-ahead's channel, made by `open()` for a stream that is not `Batched`.
    _send: trio.MemorySendChannel[Item]
    _receive: trio.MemoryReceiveChannel[Item]

    def __init__(
        self,
        trip: Trip,
        chunks: AsyncIterator[ChatChunk],
        head: Sequence[ChatChunk],
        *,
        idle_timeout_s: float,
        tab: Tab,
        measure: Measure,
        on_finish: Finisher | None = None,
        assembler: StreamAssembler | None = None,
        frames: Frames | None = None,
    ) -> None:
        self._trip = trip
        self._frames = frames or ChatCompletionFrames(trip)
        self.content_type = self._frames.content_type
        self._chunks = chunks
        self._idle_timeout_s = idle_timeout_s
        self._tab, self._measure = tab, measure
        self._on_finish = on_finish
        self._state = StreamState.STREAMING
        self._out: deque[bytes] = deque([self._frames.opening()])
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._chars = 0
        self._tools: list[str] = []
        self._error: ApiError | None = None
        self._accounting: Accounting | None = None
        self._finished = False
        self._sealed = False
        self.assembler = assembler
        for chunk in head:
            self._translate(chunk)
        # A stream that hands out a read's chunks together is read directly; any other
        # iterator through the read-ahead task, which gathers a read's chunks.
        self._batches = chunks if isinstance(chunks, Batched) else None
        # A text piece's frame, from each dialect's prepared bytes.
        self._text_frame: Callable[[str], bytes] = self._frames.text

    def open(self) -> AbstractAsyncContextManager[ChatStreamBody]:
        """Start the reader (none for a `Batched` stream, read in the writer's task);
        leaving stops it and closes the chunk iterator whatever happened (a cancelled
        exit still closes it, shielded for at most `CLEANUP_DEADLINE_S`), then reports
        how the stream ended. The upstream response itself is closed by whoever opened
        it. A `Batched` stream's body is its own (plain) context manager: no generator
        layer for what is only a `finally`."""
        return self if self._batches is not None else self._with_read_ahead()

    async def __aenter__(self) -> ChatStreamBody:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._leave()
        await self._close()

    @asynccontextmanager
    async def _with_read_ahead(self) -> AsyncIterator[ChatStreamBody]:
        try:
            self._send, self._receive = trio.open_memory_channel[Item](READ_AHEAD)
            async with background() as nursery:
                nursery.start_soon(self._read_ahead)
                try:
                    yield self
                finally:
                    self._leave()
                    nursery.cancel_scope.cancel()  # the reader may be waiting upstream
                    self._receive.close()
        finally:
            await self._close()

    async def _close(self) -> None:
        """Close the chunk iterator (shielded, bounded), then report the outcome."""
        try:
            with trio.move_on_after(CLEANUP_DEADLINE_S, shield=True):
                aclose = getattr(self._chunks, "aclose", None)
                if aclose is not None:
                    await aclose()
        finally:
            self.report()

    def _leave(self) -> None:
        if self._state is StreamState.STREAMING:
            self._state = StreamState.ABANDONED

    def __aiter__(self) -> ChatStreamBody:
        return self

    @property
    def ready(self) -> bool:
        """Frames are waiting to be sent (the opening, the first chunks read by the race):
        the server sends the head with them (`gateway.platform.body.frames_ready`)."""
        return any(self._out)

    @property
    def ended(self) -> bool:
        """The frames just taken were the last (the final chunk or the error event): the
        server sends them with the end of the body (`frames_ended`)."""
        return self._state is not StreamState.STREAMING and not self._out

    async def __anext__(self) -> bytes:
        """Every frame in hand: at least one upstream read's (waiting for it if none is
        queued), and all the rest when the upstream's answer has wholly arrived (then
        the stream's end comes with it, and one write carries the lot)."""
        batches = self._batches
        while self._state is StreamState.STREAMING:
            if batches is not None:
                if self._out and not batches.in_hand:
                    break
                await self._pull_batch(batches)
            elif self._out:
                break
            else:
                await self._pull()
        if not self._out:
            raise StopAsyncIteration
        if self._state is not StreamState.STREAMING and not self._sealed:
            self._sealed = True  # the last frames are queued: the dialect's step first
            await self._frames.seal()
        frames = b"".join(self._out)
        self._out.clear()
        return frames

    async def _read_ahead(self) -> None:
        """Move upstream chunks into the channel; an upstream failure (or silence longer
        than the idle timeout) travels as the channel's last item. Stops when the body is
        closed (its receiving side closed) or cancelled.

        One cancel scope measures the silence: a fresh `fail_after` per chunk cost about a
        tenth of a stream's CPU. Its deadline moves on at most every `SILENCE_SLACK_S`
        (moving it costs a heap push), and lies that much further out, so the stream
        ends after between `idle_timeout_s` and `idle_timeout_s + SILENCE_SLACK_S` of
        silence, never sooner.
        """
        moved_at = -math.inf
        async with self._send:
            with trio.CancelScope() as idle:
                while True:
                    now = trio.current_time()
                    if now >= moved_at + SILENCE_SLACK_S or idle.deadline == math.inf:
                        idle.deadline = now + self._idle_timeout_s + SILENCE_SLACK_S
                        moved_at = now
                    try:
                        chunk = await self._chunks.__anext__()
                    except StopAsyncIteration:
                        return
                    except ProviderError as exc:
                        await self._offer(exc, idle)
                        return
                    if not await self._offer(chunk, idle):
                        return
            await self._offer(self._silence(), idle)  # reached only when `idle` expired

    async def _offer(self, item: ChatChunk | ProviderError, idle: trio.CancelScope) -> bool:
        """Hand `item` to the body; False once the body is gone.

        Without a checkpoint when there is room: the reader then goes on to its next
        network read, so every event of one upstream read is in the channel before the
        writer wakes, and they go out in one write. A full channel means a slow client,
        not a silent upstream, so the wait for room does not count as silence.
        """
        try:
            self._send.send_nowait(item)
            return True
        except trio.WouldBlock:
            pass
        except trio.BrokenResourceError:
            return False  # the body is gone
        idle.deadline = math.inf
        try:
            await self._send.send(item)
        except trio.BrokenResourceError:
            return False
        return True

    def _silence(self) -> UpstreamTimeout:
        return UpstreamTimeout(
            self._trip.target.provider_id,
            "the upstream stream went silent",
            timeout_ms=int(self._idle_timeout_s * 1000),
        )

    async def _pull_batch(self, batches: Batched[ChatChunk]) -> None:
        """The chunks of the upstream's next read, in this task: no task or channel
        between the socket and the client's write. Silence longer than the idle timeout
        (only the upstream's: a slow client is not waited for here) fails the stream."""
        try:
            if batches.in_hand:  # taken without waiting: no silence to measure
                batch: list[ChatChunk | str] | None = await batches.next_read()
            else:
                batch = await self._within_idle_timeout(batches)
        except ProviderError as exc:
            self._fail(exc)
            return
        if batch is None:
            self._fail(self._silence())
        elif not batch:
            self._finish()
        text = self._text
        for chunk in batch or ():
            if isinstance(chunk, str):
                text(chunk)
            else:
                self._translate(chunk)

    async def _within_idle_timeout(
        self, batches: Batched[ChatChunk]
    ) -> list[ChatChunk | str] | None:
        """The next read's chunks; None when the upstream is silent for longer than the
        idle timeout."""
        with trio.move_on_after(self._idle_timeout_s):
            return await batches.next_read()
        return None

    async def _pull(self) -> None:
        """Wait for the next upstream item, then take every item already waiting."""
        try:
            self._take(await self._receive.receive())
            while self._state is StreamState.STREAMING:
                self._take(self._receive.receive_nowait())
        except trio.WouldBlock:
            return
        except trio.EndOfChannel:
            if self._state is StreamState.STREAMING:
                self._finish()

    def _take(self, item: ChatChunk | ProviderError) -> None:
        if isinstance(item, ProviderError):
            self._fail(item)
        else:
            self._translate(item)

    def _translate(self, chunk: ChatChunk) -> None:
        """One upstream chunk as client frames. The first choice's finish is kept for the
        final chunk (with the gateway's metadata); another choice's ends it at once."""
        if self.assembler is not None:
            self.assembler.add(chunk)
        if chunk.content or chunk.logprobs:
            self._chars += len(chunk.content or "")
        for piece in chunk.tool_calls:
            self._chars += len(piece.arguments)
            if piece.name:
                self._tools.append(piece.name)
        frames = self._frames.chunk(chunk)
        if frames:
            self._out.append(frames)
        if chunk.finish_reason is not None and not chunk.index:
            self._finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage

    def _text(self, text: str) -> None:
        """A plain text delta of the first choice (`Batched`'s text piece), as `_translate`
        would take `ChatChunk(text)`, without making one unless the cache keeps it."""
        if self.assembler is not None:
            self.assembler.add(ChatChunk(text))
        self._chars += len(text)
        self._out.append(self._text_frame(text))

    def _finish(self) -> None:
        usage = self._measure(self._usage, self._chars)
        accounting = self._accounting = self._tab.finished(usage)
        reason = self._finish_reason or "stop"
        self._out.append(self._frames.finish(reason, accounting, self._tools))
        self._state = StreamState.DONE

    def _fail(self, exc: ProviderError) -> None:
        self._tab.metered = self._measure(self._usage, self._chars)
        self._error = self._tab.failed(exc)
        self._out.append(self._frames.fail(self._error))
        self._state = StreamState.FAILED

    def report(self) -> None:
        """Report the outcome once (later calls do nothing): what a client that left was
        sent goes into the tab, then the owner's `on_finish` hears the outcome. A body
        never entered (the client left before sending began) is reported as abandoned by
        its owner."""
        if self._state is StreamState.STREAMING:
            self._state = StreamState.ABANDONED
        if self._finished:
            return
        self._finished = True
        if self._state is StreamState.ABANDONED:
            self._tab.metered = self._measure(self._usage, self._chars)
        if self._on_finish is None:
            return
        self._on_finish(
            StreamOutcome(
                state=self._state,
                usage=self._usage,
                completion_chars=self._chars,
                error=self._error,
                tools_called=tuple(self._tools),
                accounting=self._accounting,
            )
        )
