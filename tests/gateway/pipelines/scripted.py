"""Scripted pipeline stages for tests: each stage waits as its script says (virtual time
under `autojump_clock`) and counts the upstreams it opened and closed."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import Any

import attrs
import trio

from gateway.kernels.voice.flow import Opened
from gateway.platform.errors import ApiError
from providers.audio_types import (
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionResult,
)

Timed = Sequence[tuple[float, str]]  # (seconds after the previous item, text)


@attrs.define
class Counter:
    opened: int = 0
    closed: int = 0
    live: int = 0
    most_live: int = 0

    @asynccontextmanager
    async def held(self) -> AsyncGenerator[None, None]:
        self.opened += 1
        self.live += 1
        self.most_live = max(self.most_live, self.live)
        try:
            yield
        finally:
            self.live -= 1
            self.closed += 1


@attrs.define
class ScriptedStages:
    """`stt`: partials then the final text; `llm`: tokens; `tts`: per sentence, the wait
    before its first bytes and the number of pieces (each a further `piece_s` later)."""

    stt: Timed
    llm: Timed
    tts_first_s: Mapping[int, float] | float = 0.1
    tts_pieces: int = 2
    piece_s: float = 0.01
    fail: str | None = None  # a stage whose chain cannot serve
    fell_back: str | None = None  # a stage served after its first choice failed
    line: bool = False  # speak each answer over one scripted line (`ScriptedLine`)
    line_refused: bool = False  # the line cannot be opened
    line_fails_at: int | None = None  # the line fails when it gets to this sentence,
    line_fails_after_pieces: int = 0  # after this many pieces of its audio
    counters: dict[str, Counter] = attrs.field(
        factory=lambda: {"stt": Counter(), "llm": Counter(), "tts": Counter(), "line": Counter()}
    )
    sentences: list[str] = attrs.field(factory=list)
    prompts: list[str] = attrs.field(factory=list)

    def _opened(self, stage: str, items: AsyncIterator[Any]) -> Opened[Any]:
        if self.fail == stage:
            raise ApiError(502, "provider_error", f"every {stage} provider failed")
        before = "vendor-a" if self.fell_back == stage else None
        return Opened(items, provider=f"{stage}-sim", fell_back_from=before)

    @asynccontextmanager
    async def transcribe(self) -> AsyncIterator[Opened[TranscriptEvent]]:
        async with self.counters["stt"].held(), aclosing(self._transcript()) as items:
            yield self._opened("stt", items)

    async def _transcript(self) -> AsyncGenerator[TranscriptEvent, None]:
        *partials, (wait, final) = self.stt
        for delay, text in partials:
            await trio.sleep(delay)
            yield TranscriptDelta(text)
        await trio.sleep(wait)
        yield TranscriptDone(TranscriptionResult(text=final, language="en", duration_s=1.0))

    @asynccontextmanager
    async def complete(self, transcript: str) -> AsyncIterator[Opened[str]]:
        self.prompts.append(transcript)
        async with self.counters["llm"].held(), aclosing(self._tokens()) as items:
            yield self._opened("llm", items)

    async def _tokens(self) -> AsyncGenerator[str, None]:
        for delay, token in self.llm:
            await trio.sleep(delay)
            yield token

    @asynccontextmanager
    async def speak(self, sentence: str) -> AsyncIterator[Opened[bytes]]:
        index = len(self.sentences)
        self.sentences.append(sentence)
        async with self.counters["tts"].held(), aclosing(self._audio(index)) as items:
            yield self._opened("tts", items)

    async def _audio(self, index: int) -> AsyncGenerator[bytes, None]:
        await trio.sleep(self.first_bytes_s(index))
        for piece in range(self.tts_pieces):
            if piece:
                await trio.sleep(self.piece_s)
            yield f"s{index}p{piece};".encode()

    def voice_line(self) -> AbstractAsyncContextManager[ScriptedLine] | None:
        return self._line() if self.line else None

    @asynccontextmanager
    async def _line(self) -> AsyncIterator[ScriptedLine]:
        if self.line_refused:
            raise ApiError(503, "provider_unavailable", "the speech socket was refused")
        async with self.counters["line"].held():
            yield ScriptedLine(self)

    def first_bytes_s(self, index: int) -> float:
        first = self.tts_first_s
        return first if isinstance(first, float) else first[index]

    def usage(self) -> Mapping[str, Any]:
        return {"stt_seconds": 1.0, "llm_tokens": {"prompt": 1, "completion": 2}}

    def all_closed(self) -> bool:
        return all(c.opened == c.closed for c in self.counters.values())


class ScriptedLine:
    """A vendor that speaks one answer's sentences in turn on one connection: each
    sentence's first bytes come its `tts_first_s` after the vendor gets to it."""

    provider = "line-sim"
    fell_back_from: str | None = None

    def __init__(self, stages: ScriptedStages) -> None:
        self._stages = stages
        self._finished = 0  # sentences whose audio was all sent
        self._send, self._receive = trio.open_memory_channel[str](8)

    async def say(self, sentence: str) -> None:
        self._stages.sentences.append(sentence)
        await self._send.send(sentence)

    async def end(self) -> None:
        await self._send.aclose()

    async def audio(self) -> AsyncGenerator[tuple[int, bytes], None]:
        stages = self._stages
        index = 0
        async with self._receive:
            async for _ in self._receive:
                await trio.sleep(stages.first_bytes_s(index))
                for piece in range(stages.tts_pieces):
                    if index == stages.line_fails_at and piece == stages.line_fails_after_pieces:
                        raise ApiError(502, "provider_error", "the socket dropped")
                    if piece:
                        await trio.sleep(stages.piece_s)
                    yield index, f"s{index}p{piece};".encode()
                index += 1
                self._finished = index

    def finished(self, index: int) -> bool:
        return index < self._finished
