"""The pipeline's stages through the one upstream engine, planned and opened through the
audio and chat families: the composition root's adapter behind
`gateway.pipelines.capabilities.PreparedStages` (only the root may import both). The
stages: recognition, the language model and speech, each with its family's plan,
fallbacks, deadlines and usage record.

`prepare_stages` plans all three before anything is answered, so an unknown model, a
voice no candidate has or a model the key may not use is an ordinary HTTP error. Each
stage then opens its upstream through the engine's `open_stream` (failures before the
first result fall back to the next candidate), reads the rest under an idle deadline and
says what it used; the engine leaves one usage record when it ends: 200 when it
finished, 499 when it was cancelled (the client left, barge-in) with what it had used so
far. A speech stage runs per sentence, so every sentence leaves its own record; over one
socket per answer (`voice_line`) the answer leaves one record of its characters.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager, nullcontext
from typing import Any, TypeVar

import attrs
import trio

from gateway.app.state import AppState
from gateway.audio.input import SpeechParams, TranscriptionParams
from gateway.audio.live import OPEN_LIMIT_S, Live, live_opener, next_within, tape_seconds
from gateway.audio.plan import VoiceChoice, audio_plan, resolve_voice, voiced_targets
from gateway.audio.speech import speech_request
from gateway.audio.transcription import transcription_plan, transcription_request
from gateway.audio.voices import mapping_named
from gateway.chat.calls import Opened as ChatOpened
from gateway.chat.calls import open_chat_stream
from gateway.chat.input import parse_chat_body
from gateway.chat.plan import chain_plan, plan_trip, prompt_estimate
from gateway.chat.trip import Trip
from gateway.kernels.voice.flow import Line, Opened
from gateway.pipelines.capabilities import PreparedStages, PrepareStages
from gateway.pipelines.metered import ENDPOINT, Metered
from gateway.pipelines.templates import Template, TtsSettings
from gateway.pipelines.voice_line import SocketLine, SocketSpeaker, socket_plan
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import estimate_tokens
from gateway.upstream.chain import deadline_exceeded
from gateway.upstream.engine import Served
from gateway.upstream.facts import new_facts
from gateway.upstream.options import ServiceOptions
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target
from providers.audio_types import AudioClip, TranscriptDone, TranscriptEvent
from providers.base import Provider
from providers.elevenlabs_ws import SpeechSocket
from providers.types import ChatChunk, ToolCallDelta, Usage
from providers.voices import load_voices
from streams.tape import Tape

T = TypeVar("T")
FirstAndRest = AbstractAsyncContextManager[tuple[T, AsyncIterator[T]]]
ToolCallSink = Callable[[ToolCallDelta], None]


@attrs.frozen
class Planned:
    """The three stages' plans, fixed before the answer starts."""

    stt: TranscriptionParams
    stt_plan: Plan
    llm_trip: Trip
    tts: TtsSettings | None
    tts_plan: Plan | None
    voice: VoiceChoice | None


async def prepare_stages(
    state: AppState,
    principal: Principal,
    headers: Mapping[str, str],
    template: Template,
    clip: AudioClip,
    *,
    history: Sequence[Mapping[str, str]] = (),
    response_format: Mapping[str, Any] | None = None,
    endpoint: str = ENDPOINT,
) -> EngineStages:
    """Plan every stage of `template` (4xx for what cannot be used; nothing is called);
    every stage's usage record names `endpoint`."""
    asked = template.stt
    stt = TranscriptionParams(
        model=asked.model, response_format="json", language=asked.language, prompt=asked.prompt
    )
    stt_plan = transcription_plan(state.audio, principal, stt)  # 400 for a prompt it cannot take
    body = _chat_body(template, "", history, response_format)
    facts = new_facts(endpoint, principal, headers)
    trip = plan_trip(state.chat, facts, parse_chat_body(body), headers, body)
    tts_plan, voice = None, None
    if template.tts is not None:
        mapping = await mapping_named(state.audio, principal.workspace_id, template.tts.voice)
        voice = resolve_voice(load_voices(), template.tts.voice, mapping)
        plan = audio_plan(
            state.audio,
            principal,
            model=template.tts.model,
            capability="speech",
            service=ServiceOptions(),
            prefer=None,
        )
        tts_plan = voiced_targets(plan, voice)
    planned = Planned(stt, stt_plan, trip, template.tts, tts_plan, voice)
    return EngineStages(
        state, principal, headers, template, clip, planned, history, response_format, endpoint
    )


def _chat_body(
    template: Template,
    transcript: str,
    history: Sequence[Mapping[str, str]],
    response_format: Mapping[str, Any] | None,
) -> dict[str, Any]:
    messages: list[Mapping[str, str]] = []
    if template.llm.system_prompt:
        messages.append({"role": "system", "content": template.llm.system_prompt})
    messages.extend(history)
    messages.append({"role": "user", "content": transcript or "..."})
    body: dict[str, Any] = {
        "model": template.llm.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": template.llm.max_tokens,
    }
    if template.llm.temperature is not None:
        body["temperature"] = template.llm.temperature
    if response_format is not None:
        body["response_format"] = response_format
    return body


class EngineStages:
    """The `gateway.kernels.voice.flow.Stages` of one pipeline run (see the module docstring)."""

    def __init__(
        self,
        state: AppState,
        principal: Principal,
        headers: Mapping[str, str],
        template: Template,
        clip: AudioClip,
        planned: Planned,
        history: Sequence[Mapping[str, str]],
        response_format: Mapping[str, Any] | None,
        endpoint: str = ENDPOINT,
    ) -> None:
        self._state, self._principal, self._headers = state, principal, headers
        self._endpoint = endpoint
        self._template, self._clip, self._planned = template, clip, planned
        self._history, self._response_format = history, response_format
        self.metered = Metered()

    @property
    def prompt_estimate(self) -> int:
        return prompt_estimate(self._planned.llm_trip)

    @property
    def planned_llm_target(self) -> Target:
        """The model the plan put first (what the limits are settled on when the model
        never ran)."""
        return self._planned.llm_trip.target

    def usage(self) -> Mapping[str, Any]:
        return self.metered.body()

    def with_clip(self, clip: AudioClip, history: Sequence[Mapping[str, str]]) -> EngineStages:
        """The same plans for another turn of a conversation (a voice session)."""
        return EngineStages(
            self._state,
            self._principal,
            self._headers,
            self._template,
            clip,
            self._planned,
            history,
            self._response_format,
            self._endpoint,
        )

    def _span(self, stage: str) -> AbstractAsyncContextManager[object]:
        """The stage's span when tracing is on (`gateway.platform.tracing`): the parent of
        its upstream attempts' spans."""
        tracing = self._state.engine.tracing
        if tracing is None:
            return nullcontext()
        return tracing.stage(f"pipeline {stage}", **{"gateway.stage": stage})

    # -- recognition -----------------------------------------------------------------------

    @asynccontextmanager
    async def transcribe(self) -> AsyncGenerator[Opened[TranscriptEvent], None]:
        planned, clip = self._planned, self._clip
        facts = new_facts(self._endpoint, self._principal, self._headers)

        def opener(adapter: Provider, target: Target) -> FirstAndRest[TranscriptEvent]:
            events = adapter.transcribe_stream(transcription_request(planned.stt, clip, target))
            return _first_and_rest(events, "The upstream ended without a transcript.")

        settings = self._state.settings
        opening = self._state.engine.open_stream(
            facts, planned.stt_plan, opener, hold=None, timeout_s=settings.upstream_timeout_s
        )
        async with self._span("stt"), opening as stream:
            first, rest = stream.value
            stream.metered = Usage(audio_seconds=round(clip.duration_s, 3))
            try:
                events = _idle_deadlined(first, rest, stream.target, settings.stream_idle_timeout_s)
                async with aclosing(events) as items:
                    yield _opened(stream.served, items)
                stream.finished(stream.metered)
            finally:
                self.metered.stt_seconds += clip.duration_s

    @asynccontextmanager
    async def transcribe_live(self, tape: Tape) -> AsyncGenerator[Opened[TranscriptEvent], None]:
        """The turn being recorded on `tape`, recognised while it is spoken where the
        candidate can (`gateway.audio.live`); metered by the tape's length."""
        planned, settings = self._planned, self._state.settings
        facts = new_facts(self._endpoint, self._principal, self._headers)

        def opener(adapter: Provider, target: Target) -> AbstractAsyncContextManager[Live]:
            return live_opener(adapter, target, planned.stt, tape, settings.upstream_timeout_s)

        opening = self._state.engine.open_stream(
            facts, planned.stt_plan, opener, hold=None, timeout_s=OPEN_LIMIT_S
        )
        async with opening as stream:
            first, rest = stream.value
            timeout = settings.upstream_timeout_s
            try:
                events = _until_done(first, rest, stream.target, tape, timeout)
                async with aclosing(events) as items:
                    yield _opened(stream.served, items)
                stream.finished(Usage(audio_seconds=round(tape_seconds(tape), 3)))
            finally:
                stream.metered = Usage(audio_seconds=round(tape_seconds(tape), 3))
                self.metered.stt_seconds += tape_seconds(tape)

    # -- the language model ----------------------------------------------------------------

    def complete(self, transcript: str) -> AbstractAsyncContextManager[Opened[str]]:
        body = _chat_body(self._template, transcript, self._history, self._response_format)
        return self.converse(body)

    @asynccontextmanager
    async def converse(
        self, body: dict[str, Any], on_tool_call: ToolCallSink | None = None
    ) -> AsyncGenerator[Opened[str], None]:
        """The model on a chat body of the caller's (a Realtime session's conversation
        and tools): its text as it comes; each piece of a tool call goes to
        `on_tool_call`."""
        facts = new_facts(self._endpoint, self._principal, self._headers)
        chat = self._state.chat
        trip = plan_trip(chat, facts, parse_chat_body(body), self._headers, body)

        def opener(adapter: Provider, target: Target) -> AbstractAsyncContextManager[ChatOpened]:
            return open_chat_stream(trip, adapter, target)

        settings = self._state.settings
        opening = self._state.engine.open_stream(
            trip.facts,
            chain_plan(chat, trip),
            opener,
            hold=None,  # the pipeline's hold is settled on the model's tokens at its end
            timeout_s=settings.first_chunk_timeout_s,
        )
        async with self._span("llm"), opening as stream:
            tally = _ChatTally(on_tool_call=on_tool_call)
            finished = False
            try:
                tokens = _tokens(stream.value, tally, stream.target, settings.stream_idle_timeout_s)
                async with aclosing(tokens) as items:
                    yield _opened(stream.served, items)
                finished = True
            finally:
                usage = stream.metered = tally.usage(prompt_estimate(trip))
                self.metered.prompt_tokens += usage.prompt_tokens
                self.metered.completion_tokens += usage.completion_tokens
                self.metered.llm_target = stream.target
                if finished:
                    stream.finished(usage)

    # -- speech ----------------------------------------------------------------------------

    @asynccontextmanager
    async def speak(self, sentence: str) -> AsyncGenerator[Opened[bytes], None]:
        planned = self._planned
        assert planned.tts is not None and planned.tts_plan is not None and planned.voice
        tts, voice = planned.tts, planned.voice
        params = self._speech_params(tts, sentence)
        facts = new_facts(self._endpoint, self._principal, self._headers)

        def opener(adapter: Provider, target: Target) -> FirstAndRest[bytes]:
            chunks = adapter.speech_stream(speech_request(params, target, voice))
            return _first_and_rest(chunks, "The upstream sent no audio.")

        settings = self._state.settings
        opening = self._state.engine.open_stream(
            facts, planned.tts_plan, opener, hold=None, timeout_s=settings.upstream_timeout_s
        )
        async with self._span("tts"), opening as stream:
            first, rest = stream.value
            stream.metered = Usage(characters=len(sentence))
            try:
                chunks = _idle_deadlined(first, rest, stream.target, settings.stream_idle_timeout_s)
                async with aclosing(_whole_samples(chunks)) as items:
                    yield _opened(stream.served, items)
                stream.finished(stream.metered)
            finally:
                self.metered.tts_characters += len(sentence)

    def voice_line(self) -> AbstractAsyncContextManager[Line] | None:
        """One socket for the whole answer when the speech plan's first choice speaks
        over one (`gateway.pipelines.voice_line`); None: sentence by sentence."""
        planned = self._planned
        if planned.tts_plan is None:
            return None
        workspace = self._principal.workspace_id
        registry = self._state.engine.registry
        plan = socket_plan(planned.tts_plan, lambda pid: registry.adapter(workspace, pid))
        return None if plan is None else self._line(plan)

    @asynccontextmanager
    async def _line(self, plan: Plan) -> AsyncGenerator[Line, None]:
        """The socket opened through the engine (a refusal falls back to the next socket
        candidate, all within the upstream deadline); one usage record for the answer's
        characters when it is left."""
        planned = self._planned
        assert planned.tts is not None and planned.voice is not None
        params = self._speech_params(planned.tts, "")
        voice = planned.voice

        @asynccontextmanager
        async def opener(adapter: Provider, target: Target) -> AsyncGenerator[SpeechSocket, None]:
            assert isinstance(adapter, SocketSpeaker)
            async with adapter.speech_socket(speech_request(params, target, voice)) as socket:
                yield socket

        settings = self._state.settings
        facts = new_facts(self._endpoint, self._principal, self._headers)
        opening = self._state.engine.open_stream(
            facts, plan, opener, hold=None, timeout_s=settings.upstream_timeout_s
        )
        async with self._span("tts"), opening as stream:
            served = stream.served
            before = served.primary.provider_id if served.fell_back else None
            line = SocketLine(
                served.value,
                served.target.provider_id,
                before,
                first_s=settings.upstream_timeout_s,
                idle_s=settings.stream_idle_timeout_s,
            )
            finished = False
            try:
                yield line
                finished = True
            finally:
                self.metered.tts_characters += line.characters
                usage = stream.metered = Usage(characters=line.characters)
                if finished:
                    stream.finished(usage)

    def _speech_params(self, tts: TtsSettings, text: str) -> SpeechParams:
        return SpeechParams(
            model=tts.model,
            input=text,
            voice=tts.voice,
            response_format="pcm",  # sentences concatenate; encoded once (`encoding`)
            speed=tts.speed,
            stream=True,
            service=ServiceOptions(),
        )


@asynccontextmanager
async def _first_and_rest(
    opening: AbstractAsyncContextManager[AsyncIterator[T]], nothing: str
) -> AsyncGenerator[tuple[T, AsyncIterator[T]], None]:
    """An upstream stream held open at its first item (what the race waits for): the
    item and the rest. Empty items do not count; a stream that ends before one is the
    provider's error (502, `nothing`)."""
    async with opening as items:
        async for item in items:
            if item:
                yield item, items
                return
        raise ApiError(502, "provider_error", nothing)


def _opened(served: Served[Any], items: AsyncIterator[T]) -> Opened[T]:
    before = served.primary.provider_id if served.fell_back else None
    return Opened(items, provider=served.target.provider_id, fell_back_from=before)


async def _idle_deadlined(
    first: T, rest: AsyncIterator[T], target: Target, idle_s: float
) -> AsyncGenerator[T, None]:
    """`first`, then `rest` (see `_within`); ends after a transcript's final event."""
    yield first
    if isinstance(first, TranscriptDone):
        return
    async with aclosing(_within(rest, target, idle_s)) as items:
        async for item in items:
            yield item
            if isinstance(item, TranscriptDone):
                return


async def _until_done(
    first: TranscriptEvent,
    rest: AsyncIterator[TranscriptEvent],
    target: Target,
    tape: Tape,
    timeout_s: float,
) -> AsyncGenerator[TranscriptEvent, None]:
    """A live recognition's events up to its final one (`live.next_within` each)."""
    item = first
    while True:
        yield item
        if isinstance(item, TranscriptDone):
            return
        try:
            item = await next_within(rest, tape, target, timeout_s)
        except StopAsyncIteration:
            raise ApiError(
                502, "provider_error", "The upstream ended without a transcript."
            ) from None


async def _within(
    items: AsyncIterator[T], target: Target, idle_s: float
) -> AsyncGenerator[T, None]:
    """`items`, each next one within `idle_s` (a silent upstream is a 504)."""
    while True:
        try:
            with trio.fail_after(idle_s):
                item = await anext(items)
        except StopAsyncIteration:
            return
        except trio.TooSlowError:
            raise deadline_exceeded(target.provider_id, idle_s) from None
        yield item


async def _whole_samples(chunks: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """PCM16 pieces cut at whole samples (a vendor may split one across two pieces), so
    every `audio.chunk` a client gets decodes on its own."""
    odd = b""
    async for chunk in chunks:
        data = odd + chunk
        cut = len(data) // 2 * 2
        odd = data[cut:]
        if cut:
            yield data[:cut]


@attrs.define
class _ChatTally:
    reported: Usage | None = None
    text: str = ""
    on_tool_call: ToolCallSink | None = None

    def usage(self, prompt: int) -> Usage:
        if self.reported is not None and self.reported.total_tokens:
            return self.reported
        return Usage(prompt, estimate_tokens(self.text) if self.text else 0)

    def text_of(self, chunk: ChatChunk) -> str:
        if chunk.usage is not None:
            self.reported = chunk.usage
        text = chunk.content or ""
        self.text += text
        if self.on_tool_call is not None:
            for delta in chunk.tool_calls:
                self.on_tool_call(delta)
        return text


async def _tokens(
    opened: ChatOpened, tally: _ChatTally, target: Target, idle_s: float
) -> AsyncGenerator[str, None]:
    """The text of the model's chunks as they arrive (head first), counting usage."""
    for chunk in opened.head:
        text = tally.text_of(chunk)
        if text:
            yield text
    async with aclosing(_within(opened.rest, target, idle_s)) as chunks:
        async for chunk in chunks:
            text = tally.text_of(chunk)
            if text:
                yield text


def stages_of(state: AppState) -> PrepareStages:
    """`prepare_stages` bound to the root's state, as the pipelines family takes it."""

    async def prepare(
        principal: Principal,
        headers: Mapping[str, str],
        template: Template,
        clip: AudioClip,
        *,
        history: Sequence[Mapping[str, str]] = (),
        response_format: Mapping[str, Any] | None = None,
        endpoint: str = ENDPOINT,
    ) -> PreparedStages:
        return await prepare_stages(
            state,
            principal,
            headers,
            template,
            clip,
            history=history,
            response_format=response_format,
            endpoint=endpoint,
        )

    return prepare
