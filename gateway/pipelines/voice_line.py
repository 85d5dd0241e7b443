"""One speech socket per answer: a voice pipeline feeds ElevenLabs' stream-input socket
sentence by sentence instead of making one speech call per sentence.

A provider whose settings chose the WebSocket transport (`speech_transport:
"websocket"`) takes the whole answer on one connection: the text of each sentence goes
out as soon as the model has written it (ending with a space, `flush: true` so the
vendor speaks it now), the empty text closes the input, and the audio comes back on the
same connection in the order the text went in. That saves a connection, a handshake and
a request per sentence, and the vendor keeps its prosody across sentences.

The audio has to be put back into sentences (the flow relays each sentence's audio in
turn, and a voice session keeps in its history only the sentences whose audio was all
sent): every audio message carries the alignment of the characters it speaks, so
`SentenceMap` counts them against the sentences sent. A message without an alignment
belongs to the sentence of the one before it.

Deadlines: the connection and the handshake within the upstream deadline (through the
engine, which falls back to the next socket candidate when one refuses); the first audio
after text was given to an idle vendor within the same deadline; every later gap within
the stream's idle deadline. While every character sent has been spoken the vendor has
nothing to say, so the wait has no deadline (the model's own idle deadline governs).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar, runtime_checkable

import attrs
import trio

from gateway.platform.errors import from_provider_error
from gateway.upstream.chain import deadline_exceeded
from gateway.upstream.plan import Plan
from providers.audio_types import SpeechRequest
from providers.base import Provider
from providers.elevenlabs_ws import ServerMessage, SpeechSocket
from providers.errors import ProviderError

T = TypeVar("T")


@runtime_checkable
class SocketSpeaker(Protocol):
    """An adapter that can take a whole answer's text on one socket."""

    def uses_speech_socket(self) -> bool: ...

    def speech_socket(
        self, request: SpeechRequest
    ) -> AbstractAsyncContextManager[SpeechSocket]: ...


def socket_plan(plan: Plan, adapter_of: Callable[[str], Provider | None]) -> Plan | None:
    """The plan's candidates that speak over a socket, when its first choice does (None:
    the answer is spoken sentence by sentence, as the plan says)."""

    def on_socket(provider_id: str) -> bool:
        adapter = adapter_of(provider_id)
        return isinstance(adapter, SocketSpeaker) and adapter.uses_speech_socket()

    if not on_socket(plan.primary.provider_id):
        return None
    targets = tuple(t for t in plan.targets if on_socket(t.provider_id))
    return attrs.evolve(plan, targets=targets)


def visible_chars(text: str) -> int:
    """Characters as a vendor's alignment counts them here: spaces left out."""
    return sum(1 for char in text if not char.isspace())


@attrs.define
class SentenceMap:
    """Which sentence each piece of audio speaks, from the characters it is aligned with.

    Pure bookkeeping: `add` a sentence when its text is sent, `place` each piece of audio
    as it comes. A piece belongs to the sentence its first aligned character is in; a
    piece without an alignment to the sentence of the piece before it. Never a sentence
    not sent yet, never an earlier one than the last piece's.
    """

    ends: list[int] = attrs.field(factory=list)  # characters up to each sentence's end
    spoken: int = 0  # characters the audio so far was aligned with
    current: int = 0

    def add(self, sentence: str) -> None:
        self.ends.append((self.ends[-1] if self.ends else 0) + visible_chars(sentence))

    def place(self, chars: int) -> int:
        if chars:
            found = bisect.bisect_right(self.ends, self.spoken)
            self.current = max(self.current, min(found, len(self.ends) - 1))
            self.spoken += chars
        return self.current

    def finished(self, index: int) -> bool:
        """Whether the audio so far was aligned with all of sentence `index`."""
        return index < len(self.ends) and self.spoken >= self.ends[index]

    @property
    def outstanding(self) -> bool:
        """Whether text was sent whose audio has not all come."""
        return bool(self.ends) and self.spoken < self.ends[-1]


class SocketLine:
    """The open socket of one answer, as the flow uses it (`gateway.kernels.voice.flow.Line`).

    `say` and `end` run in the task that reads the sentences; `audio` in the task that
    relays the audio. `audio` raises `ApiError` (the mapped provider error, or a 504 when
    a deadline passed); cancelling it loses nothing but the wait.
    """

    def __init__(
        self,
        socket: SpeechSocket,
        provider: str,
        fell_back_from: str | None,
        *,
        first_s: float,
        idle_s: float,
    ) -> None:
        self.provider, self.fell_back_from = provider, fell_back_from
        self.characters = 0  # what was sent: the answer's one usage record
        self._socket, self._first_s, self._idle_s = socket, first_s, idle_s
        self._map = SentenceMap()
        self._ended = False
        self._awaiting_first = False  # text went to an idle vendor; no audio since
        self._wait: trio.CancelScope | None = None

    async def say(self, sentence: str) -> None:
        """Send one sentence, flushed: the vendor speaks it now."""
        if not self._map.outstanding:
            self._awaiting_first = True
        self._map.add(sentence)
        self.characters += len(sentence)
        self._rearm()
        await self._guarded(self._socket.send(sentence, flush=True))

    async def end(self) -> None:
        """No more text; the vendor finishes speaking, then says it is done."""
        self._ended = True
        self._rearm()
        await self._guarded(self._socket.end())

    def finished(self, index: int) -> bool:
        """Whether the audio of sentence `index` has all come, by its alignment."""
        return self._map.finished(index)

    async def audio(self) -> AsyncGenerator[tuple[int, bytes], None]:
        """(sentence index, PCM16 cut at whole samples) in the vendor's order, until its
        final message."""
        odd = b""
        while True:
            message = await self._next()
            index = self._map.place(message.spoken_chars)
            if message.audio:
                self._awaiting_first = False
                data = odd + message.audio
                cut = len(data) // 2 * 2
                odd = data[cut:]
                if cut:
                    yield index, data[:cut]
            if message.final:
                return

    async def _next(self) -> ServerMessage:
        with trio.CancelScope(deadline=self._deadline()) as scope:
            self._wait = scope
            try:
                return await self._guarded(self._socket.receive())
            finally:
                self._wait = None
        seconds = self._first_s if self._awaiting_first else self._idle_s
        await self._socket.close()  # the answer may go on without it: free it now
        raise from_provider_error(deadline_exceeded(self.provider, seconds))

    def _deadline(self) -> float:
        if not (self._map.outstanding or self._ended):
            return math.inf  # nothing to say yet: the model is writing
        seconds = self._first_s if self._awaiting_first else self._idle_s
        return trio.current_time() + seconds

    def _rearm(self) -> None:
        """A reader waiting without a deadline (the vendor had nothing to say) gets one
        once there is text (or the end); a running deadline stays: the idle gap counts
        from the vendor's last message, not from our last text."""
        if self._wait is not None and self._wait.deadline == math.inf:
            self._wait.deadline = self._deadline()

    async def _guarded(self, step: Awaitable[T]) -> T:
        try:
            return await step
        except ProviderError as exc:
            raise from_provider_error(exc) from exc
