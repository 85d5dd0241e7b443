"""The overlapped pipeline: recognition, then the language model and speech side by side.

One nursery per answer; stages connected by bounded memory channels:

    STT partials and final -> LLM tokens -> sentence splitter -> TTS per sentence
    (started as soon as a sentence is complete, at most `TTS_IN_FLIGHT` at once) ->
    ordered merge -> events

(or, when the stages have a `Line`, every sentence onto one speech socket as it is
complete, its audio routed back to its sentence: `gateway.pipelines.voice_line`), so
the first `audio.chunk` leaves when the first sentence's first bytes arrive, whatever
the rest of the answer is doing, and audio always leaves in sentence order even when a
later sentence's synthesis finishes first. Every event goes into one bounded channel
that the caller drains (the NDJSON writer, the whole-answer collector, the voice
session); a slow reader applies backpressure up the chain.

The stages are a `Stages` object (the engine-backed one is `gateway.app.voice_stages`;
tests script their own), each an async context manager that opens one upstream and
closes it when left: cancelling the nursery (the client left, barge-in) closes every
upstream at once. A stage whose chain cannot serve raises `ApiError`: the flow sends an
`error` event (`recoverable: false`) and ends; a stage served by a fallback after its
first choice failed is reported as a recoverable `error` event, and goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

import attrs
import trio

from gateway.platform.errors import ApiError
from providers.audio_types import TranscriptDelta, TranscriptDone, TranscriptEvent
from streams.handoff import items, put, waiting
from streams.sentences import SentenceSplitter

T = TypeVar("T")
Voiced = tuple[str, trio.MemoryReceiveChannel[bytes]]  # a sentence and its audio, in order
Event = dict[str, Any]  # `type` and its data; `audio.chunk` data is raw bytes until rendered

TTS_IN_FLIGHT = 3  # sentences being synthesised at once, the one being played included
SENTENCE_BUFFER = 8  # complete sentences waiting for a synthesis slot
CHUNK_BUFFER = 16  # audio pieces of one sentence waiting for their turn
EVENT_BUFFER = 32  # events waiting for the reader


@attrs.frozen
class Opened(Generic[T]):
    """An open stage: its items, who serves it, and the provider that failed before it
    (None when the first choice served)."""

    items: AsyncIterator[T]
    provider: str
    fell_back_from: str | None = None


class Encoder(Protocol):
    """Turns the answer's PCM into one file in another format, piece by piece
    (`gateway.pipelines.encoding`); `open` readies it before any audio (off the
    critical path), `close` frees it on every path."""

    async def open(self) -> None: ...

    async def feed(self, pcm: bytes) -> bytes: ...

    async def finish(self) -> bytes: ...

    def close(self) -> None: ...


class Line(Protocol):
    """One upstream that speaks a whole answer (`gateway.pipelines.voice_line`): the
    sentences go in as they come, the audio comes back tagged with its sentence's index,
    in order. Its failures are `ApiError`s."""

    provider: str
    fell_back_from: str | None

    async def say(self, sentence: str) -> None: ...

    async def end(self) -> None: ...

    def audio(self) -> AsyncIterator[tuple[int, bytes]]: ...

    def finished(self, index: int) -> bool:
        """Whether all of sentence `index`'s audio has come (as far as the line knows)."""
        ...


class Stages(Protocol):
    """What a pipeline calls; each method opens one upstream for the block. `voice_line`
    is None when the answer is spoken sentence by sentence (`speak`)."""

    def transcribe(self) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]: ...

    def complete(self, transcript: str) -> AbstractAsyncContextManager[Opened[str]]: ...

    def speak(self, sentence: str) -> AbstractAsyncContextManager[Opened[bytes]]: ...

    def voice_line(self) -> AbstractAsyncContextManager[Line] | None: ...

    def usage(self) -> Mapping[str, Any]: ...


Finisher = Callable[["Trace"], Awaitable[Mapping[str, Any]]]


@attrs.define
class Trace:
    """What one run produced and when (trio time), for the result and the `done` event."""

    started: float
    transcript: str = ""
    response: str = ""
    spoken: list[str] = attrs.field(factory=list)  # sentences whose audio was all sent
    audio: list[bytes] = attrs.field(factory=list)
    providers: dict[str, str | None] = attrs.field(factory=dict)
    stt_done: float | None = None
    llm_done: float | None = None
    tts_started: float | None = None
    first_audio: float | None = None
    tts_done: float | None = None
    finished: float | None = None
    error: ApiError | None = None

    def latency(self) -> dict[str, int]:
        """The spec's `stt_ms`, `llm_ms`, `tts_ms`, `total_ms`, and the time to first audio
        (what a voice agent is judged by)."""
        end = self.finished if self.finished is not None else trio.current_time()
        stt_done = self.stt_done if self.stt_done is not None else end
        tts_from = self.tts_started if self.tts_started is not None else end
        figures = {
            "stt_ms": _ms(stt_done - self.started),
            "llm_ms": _ms((self.llm_done or end) - stt_done) if self.stt_done else 0,
            "tts_ms": _ms((self.tts_done or end) - tts_from) if self.tts_started else 0,
            "total_ms": _ms(end - self.started),
        }
        if self.first_audio is not None:
            figures["first_audio_ms"] = _ms(self.first_audio - self.started)
        return figures


@attrs.frozen
class _Run:
    """What every step of one run works with: the stages it calls, the trace it fills and
    the channel its events go into."""

    stages: Stages
    trace: Trace
    events: trio.MemorySendChannel[Event]


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


async def run_pipeline(
    stages: Stages,
    events: trio.MemorySendChannel[Event],
    *,
    speak: bool,
    finisher: Finisher | None = None,
    shape_transcript: Callable[[str], str] | None = None,
    trace: Trace | None = None,
    mark_sentences: bool = False,
    encoder: Encoder | None = None,
) -> Trace:
    """Run one pipeline, sending its events into `events` (closed when done).

    Ends with a `done` event (`usage`, `latency`, and what `finisher` adds), or with a
    non-recoverable `error` event when a stage could not be served. `shape_transcript`
    rewrites the final transcript before the model sees it. `trace` (a fresh one by
    default) is filled as the run goes, so a caller that cancels it still knows what was
    done; `mark_sentences` adds an `audio.sentence` event after each sentence's audio (for
    a voice session's history, never sent to a client). With `encoder`, the
    `audio.chunk` data is its output (one file across the chunks) instead of the raw
    PCM16 24 kHz (`trace.audio` keeps the PCM either way). Cancellation cancels
    every stage and closes every upstream, and propagates.
    """
    trace = trace if trace is not None else Trace(started=trio.current_time())
    async with events:
        failure: ApiError | None = None
        try:
            await _recognise(_Run(stages, trace, events), shape_transcript or str.strip)
            await answer(
                stages,
                trace,
                events,
                speak=speak,
                mark_sentences=mark_sentences,
                encoder=encoder,
            )
            extra = await finisher(trace) if finisher is not None else {}
        except* ApiError as group:
            failure = _first_error(group)
        trace.finished = trio.current_time()
        if failure is not None:
            trace.error = failure
            await put(events, {"type": "error", "message": failure.message, "recoverable": False})
            return trace
        done = {"type": "done", "usage": dict(stages.usage()), "latency": trace.latency()}
        await put(events, done | dict(extra))
    return trace


def _first_error(group: BaseExceptionGroup[ApiError]) -> ApiError:
    leaves: list[ApiError] = []

    def walk(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                walk(inner)
        elif isinstance(error, ApiError):
            leaves.append(error)

    walk(group)
    return leaves[0]


async def _recognise(
    run: _Run,
    shape: Callable[[str], str],
) -> None:
    async with run.stages.transcribe() as opened:
        run.trace.providers["stt"] = opened.provider
        await _note_fallback(opened, "stt", run.events)
        async for event in opened.items:
            if isinstance(event, TranscriptDelta):
                await put(run.events, {"type": "transcription.partial", "text": event.text})
            elif isinstance(event, TranscriptDone):
                run.trace.transcript = shape(event.result.text.strip())
                run.trace.stt_done = trio.current_time()
                await put(run.events, {"type": "transcription.final", "text": run.trace.transcript})
                return
    raise ApiError(502, "provider_error", "The recognition ended without a transcript.")


async def answer(
    stages: Stages,
    trace: Trace,
    events: trio.MemorySendChannel[Event],
    *,
    speak: bool,
    mark_sentences: bool = False,
    encoder: Encoder | None = None,
) -> None:
    """The language model and, when `speak`, speech in parallel (the part of a pipeline
    a voice session reruns each turn). Cancellation stops both and closes their
    upstreams."""
    run = _Run(stages, trace, events)
    async with trio.open_nursery() as nursery:
        if not speak:
            await _think(run, None)
            return
        send, receive = trio.open_memory_channel[str](SENTENCE_BUFFER)
        nursery.start_soon(_think, run, send)
        merge = _Merge(trace, events, mark_sentences, encoder)
        nursery.start_soon(_voice, run, receive, merge)


async def _think(
    run: _Run,
    sentences: trio.MemorySendChannel[str] | None,
) -> None:
    """Relay the model's tokens and hand each complete sentence to speech at once."""
    splitter = SentenceSplitter()
    async with run.stages.complete(run.trace.transcript) as opened:
        run.trace.providers["llm"] = opened.provider
        await _note_fallback(opened, "llm", run.events)
        async for token in opened.items:
            run.trace.response += token
            await put(run.events, {"type": "llm.token", "token": token})
            if sentences is not None:
                for sentence in splitter.feed(token):
                    await put(sentences, sentence)
    run.trace.llm_done = trio.current_time()
    if sentences is not None:
        async with sentences:  # closing it tells speech there is no more to say
            for sentence in splitter.flush():
                await put(sentences, sentence)
    await put(run.events, {"type": "llm.done", "text": run.trace.response})


async def _voice(
    run: _Run,
    sentences: trio.MemoryReceiveChannel[str],
    merge: _Merge,
) -> None:
    """Speak the answer on one line when the stages have one (opened at once, while the
    model writes its first sentence), else sentence by sentence. A line that cannot be
    opened is a recoverable `error` event: the answer goes on sentence by sentence."""
    opening = run.stages.voice_line()
    if opening is None:
        await _voice_per_sentence(run, sentences, merge)
        return
    async with AsyncExitStack() as stack:
        try:
            line = await stack.enter_async_context(opening)
        except ApiError as failed:
            await _note_per_sentence(f"could not open its socket ({failed.message})", run.events)
            await _voice_per_sentence(run, sentences, merge)
            return
        run.trace.providers["tts"] = line.provider
        await _note_fallback(line, "tts", run.events)
        await _voice_on_line(line, run, sentences, merge)


@attrs.define
class _LineFeed:
    """The sentences given to a line, each with the channel its audio goes to (in order,
    as the merge reads them); `held`: one taken from the model, not given yet; `current`:
    the sentence the line's audio goes to now, `heard` whether any of it came."""

    routes: list[tuple[str, trio.MemorySendChannel[bytes]]] = attrs.field(factory=list)
    held: str | None = None
    current: int = 0
    heard: bool = False
    ended: bool = False  # the end of the text was given


async def _voice_on_line(
    line: Line,
    run: _Run,
    sentences: trio.MemoryReceiveChannel[str],
    merge: _Merge,
) -> None:
    """Each sentence onto the line as it comes; its audio, routed back to its sentence,
    relayed in order by the merge. The order channel bounds how far the text may run
    ahead of the audio being relayed.

    A line that fails before any audio of the sentence it is speaking came (the vendor
    refused the text, went silent, dropped the socket) hands that sentence and the rest
    to one synthesis per sentence, with a recoverable `error` event, as a sentence whose
    synthesis fails before its first bytes falls back; a failure in the middle of a
    sentence's audio ends the answer with the non-recoverable one.
    """
    feed = _LineFeed()

    async def on_line(order: trio.MemorySendChannel[Voiced], nursery: trio.Nursery) -> None:
        failure = await _run_line(line, run.trace, sentences, order, feed)
        if failure is None:
            return
        reason = f"failed on {line.provider}'s socket ({failure.message})"
        await _note_per_sentence(reason, run.events)
        for sentence, chunks in feed.routes[feed.current :]:
            nursery.start_soon(_speak, run, sentence, chunks)
        if feed.held is not None:
            await _start_speaking(run, feed.held, order, nursery)
        await _speak_each(run, sentences, order, nursery)

    await _in_order(sentences, merge, on_line)


async def _run_line(
    line: Line,
    trace: Trace,
    sentences: trio.MemoryReceiveChannel[str],
    order: trio.MemorySendChannel[Voiced],
    feed: _LineFeed,
) -> ApiError | None:
    """Feed the line and route its audio until it ends (None), or until it fails before
    the audio of `feed.current` began (that failure; the rest is left in `feed`)."""
    failure: ApiError | None = None
    async with trio.open_nursery() as nursery:

        async def route() -> None:
            nonlocal failure
            try:
                await _route(line, feed)
                if not feed.ended:  # a vendor that says it is done before being told
                    raise ApiError(502, "provider_error", "The speech socket ended early.")
            except ApiError as error:
                if feed.heard and line.finished(feed.current):
                    feed.routes[feed.current][1].close()  # it was all heard: spoken
                    feed.current += 1
                    feed.heard = False
                if feed.heard:
                    raise
                failure = error
                nursery.cancel_scope.cancel()

        nursery.start_soon(route)
        await _give(line, trace, sentences, order, feed)
    return failure


async def _give(
    line: Line,
    trace: Trace,
    sentences: trio.MemoryReceiveChannel[str],
    order: trio.MemorySendChannel[Voiced],
    feed: _LineFeed,
) -> None:
    """Each sentence, once its place in the merge is taken, onto the line; then the end."""
    try:
        async for sentence in items(sentences):
            feed.held = sentence
            chunks = await _take_place(sentence, order, trace)  # waits while too far ahead
            feed.routes.append((sentence, chunks))
            feed.held = None
            await line.say(sentence)
        feed.ended = True
        await line.end()
    except ApiError:
        # The line is broken: its reader sees it too (the socket is closed, or the text
        # waits unanswered until its deadline) and decides what follows.
        await trio.sleep_forever()


async def _route(line: Line, feed: _LineFeed) -> None:
    """The line's audio into its sentence's channel; a sentence's channel closes when
    audio of a later one comes (or the line ends), which tells the merge it is spoken."""
    async for index, chunk in line.audio():
        if index >= len(feed.routes):
            continue  # audio before any text: nothing it could belong to
        while feed.current < index:
            feed.routes[feed.current][1].close()
            feed.current += 1
            feed.heard = False
        feed.heard = True
        await put(feed.routes[feed.current][1], chunk)
    for _, chunks in feed.routes[feed.current :]:
        chunks.close()


async def _voice_per_sentence(
    run: _Run,
    sentences: trio.MemoryReceiveChannel[str],
    merge: _Merge,
) -> None:
    """Start a synthesis per sentence (bounded) and merge their audio in sentence order.

    The order channel holds each sentence's audio channel in sentence order; its buffer
    is the bound on syntheses in flight besides the one being merged.
    """
    await _in_order(sentences, merge, partial(_speak_each, run, sentences))


async def _in_order(
    sentences: trio.MemoryReceiveChannel[str],
    merge: _Merge,
    speak: Callable[[trio.MemorySendChannel[Voiced], trio.Nursery], Awaitable[None]],
) -> None:
    """Run `speak` with the order channel the merge reads and the nursery its syntheses
    run in; returns once every sentence's audio was merged. The order channel's buffer
    bounds how far the text may run ahead of the audio being relayed; leaving closes
    `sentences` and, once `speak` returns, the order channel (the merge's end)."""
    order_send, order_receive = trio.open_memory_channel[Voiced](TTS_IN_FLIGHT - 1)
    async with sentences, trio.open_nursery() as nursery:
        nursery.start_soon(merge.run, order_receive)
        async with order_send:
            await speak(order_send, nursery)


async def _speak_each(
    run: _Run,
    sentences: trio.MemoryReceiveChannel[str],
    order: trio.MemorySendChannel[Voiced],
    nursery: trio.Nursery,
) -> None:
    """A synthesis per sentence still to come, each started once its place is taken."""
    async for sentence in items(sentences):
        await _start_speaking(run, sentence, order, nursery)


async def _start_speaking(
    run: _Run,
    sentence: str,
    order: trio.MemorySendChannel[Voiced],
    nursery: trio.Nursery,
) -> None:
    """One sentence's synthesis, once its place in the merge is taken (waits while too
    many are in flight)."""
    chunks = await _take_place(sentence, order, run.trace)
    nursery.start_soon(_speak, run, sentence, chunks)


async def _take_place(
    sentence: str, order: trio.MemorySendChannel[Voiced], trace: Trace
) -> trio.MemorySendChannel[bytes]:
    """The channel `sentence`'s audio goes into, once the merge has its place in the
    order (waits while the order channel is full); the first such marks `tts_started`."""
    chunks_send, chunks_receive = trio.open_memory_channel[bytes](CHUNK_BUFFER)
    await order.send((sentence, chunks_receive))
    if trace.tts_started is None:
        trace.tts_started = trio.current_time()
    return chunks_send


async def _speak(
    run: _Run,
    sentence: str,
    chunks: trio.MemorySendChannel[bytes],
) -> None:
    async with chunks, run.stages.speak(sentence) as opened:
        run.trace.providers.setdefault("tts", opened.provider)
        await _note_fallback(opened, "tts", run.events)
        async for chunk in opened.items:
            if chunk:
                await put(chunks, chunk)
    # The sentence is recorded as spoken by the merge, once its audio has all been sent.
    _ = sentence


@attrs.define
class _Merge:
    """Relays each sentence's audio in turn (through the encoder, when there is one); a
    sentence counts as spoken once all of its audio was handed on (what a voice session
    keeps in its history after barge-in)."""

    trace: Trace
    events: trio.MemorySendChannel[Event]
    mark_sentences: bool
    encoder: Encoder | None

    async def run(self, order: trio.MemoryReceiveChannel[Voiced]) -> None:
        trace, encoder = self.trace, self.encoder
        try:
            if encoder is not None:
                await encoder.open()  # while the model writes its first sentence
            async with order:
                async for sentence, chunks in items(order):
                    async with chunks:
                        async for chunk in items(chunks):
                            await self._relay(chunk, chunks)
                    trace.spoken.append(sentence)
                    trace.tts_done = trio.current_time()
                    if self.mark_sentences:
                        await put(self.events, {"type": "audio.sentence", "text": sentence})
            if encoder is not None:
                await self._send(await encoder.finish())
        finally:
            if encoder is not None:
                encoder.close()

    async def _relay(self, chunk: bytes, chunks: trio.MemoryReceiveChannel[bytes]) -> None:
        """One piece of audio out; with an encoder, the pieces that arrived while it
        was busy too, in one trip (an encoder step costs a thread hop whatever its size,
        so a loaded gateway encodes in fewer, larger steps instead of falling behind)."""
        if self.encoder is None:
            self.trace.audio.append(chunk)
            await self._send(chunk)
            return
        pieces = [chunk, *waiting(chunks, CHUNK_BUFFER)]
        self.trace.audio.extend(pieces)
        await self._send(await self.encoder.feed(b"".join(pieces)))

    async def _send(self, data: bytes) -> None:
        if not data:
            return  # the encoder holds a frame's worth so far
        if self.trace.first_audio is None:
            self.trace.first_audio = trio.current_time()
        await put(self.events, {"type": "audio.chunk", "data": data})


async def _note_per_sentence(reason: str, events: trio.MemorySendChannel[Event]) -> None:
    """The recoverable `error` event of a speech line given up: `reason` says why."""
    message = f"The tts stage {reason}; it goes on sentence by sentence."
    await put(events, {"type": "error", "message": message, "recoverable": True})


async def _note_fallback(
    opened: Opened[Any] | Line, stage: str, events: trio.MemorySendChannel[Event]
) -> None:
    if opened.fell_back_from is not None:
        message = (
            f"The {stage} stage failed on {opened.fell_back_from}; "
            f"it goes on with {opened.provider}."
        )
        await put(events, {"type": "error", "message": message, "recoverable": True})
