"""The cascade a Realtime session runs: speech-to-text, the language model and
text-to-speech of a pipeline template, each through the one upstream engine (its
fallbacks, deadlines, limits, usage record, cost, energy and carbon), with the session's
configuration laid over the template (instructions, voice, speed, transcription model,
output length).

`plan_cascade` plans every stage before the session uses it, so an unknown model, a voice
no candidate has or a model the key may not use is refused when the session starts or
is updated, not in the middle of an answer. Each response is admitted under the key's
limits and settled with the model's real tokens (`admitted`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

import attrs

from gateway.pipelines.custom import find_template
from gateway.pipelines.flow import Line, Opened, Stages
from gateway.pipelines.stages import EngineStages, Metered, prepare_stages
from gateway.pipelines.templates import Template
from gateway.platform.auth import Principal
from gateway.platform.state import AppState
from gateway.realtime.config import SessionConfig
from gateway.upstream.facts import new_facts
from gateway.upstream.limits import Hold
from gateway.upstream.options import ServiceOptions
from providers.audio_types import AudioClip, TranscriptEvent
from providers.types import ToolCallDelta, Usage

ENDPOINT = "realtime"  # every stage's usage record
SILENCE = AudioClip(b"", "wav", 0.0, "turn.wav")


@attrs.frozen
class Caller:
    """Who the session serves: the narrow dependencies of its cascade."""

    state: AppState
    principal: Principal
    headers: Mapping[str, str]


def session_template(base: Template, config: SessionConfig) -> Template:
    """`base` with the session's configuration laid over it. Pure."""
    stt = base.stt
    if config.transcription is not None:
        language = config.transcription.language or stt.language
        stt = attrs.evolve(stt, model=config.transcription.model, language=language)
    llm = base.llm
    if config.instructions:
        llm = attrs.evolve(llm, system_prompt=config.instructions)
    if config.max_output_tokens is not None:
        llm = attrs.evolve(llm, max_tokens=config.max_output_tokens)
    if config.temperature is not None:
        llm = attrs.evolve(llm, temperature=config.temperature)
    tts = base.tts
    if tts is not None and config.speaks:
        tts = attrs.evolve(tts, voice=config.voice, speed=config.speed)
    return attrs.evolve(base, stt=stt, llm=llm, tts=tts if config.speaks else None)


async def base_template(caller: Caller, name: str) -> Template:
    """A pipeline template by id or name (404 `template_not_found` otherwise)."""
    return await find_template(caller.state, caller.principal.workspace_id, name)


class Responding(Stages, Protocol):
    """One response's stages, and what they used so far."""

    @property
    def metered(self) -> Metered: ...


class Cascade(Protocol):
    """What a session runs on (the engine's `EngineCascade`, or a test's script)."""

    @property
    def template(self) -> Template: ...

    def transcribe(
        self, clip: AudioClip
    ) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]: ...

    def response(self, body: dict[str, Any], calls: ToolCalls) -> Responding: ...

    def admitted(
        self, response: Responding, prompt_tokens: int, max_tokens: int
    ) -> AbstractAsyncContextManager[Hold]: ...


@attrs.frozen
class EngineCascade:
    """One configuration's stages, planned through the engine."""

    caller: Caller
    template: Template
    stages: EngineStages

    def transcribe(self, clip: AudioClip) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]:
        return self.stages.with_clip(clip, ()).transcribe()

    def response(self, body: dict[str, Any], calls: ToolCalls) -> ResponseStages:
        return ResponseStages(self.stages.with_clip(SILENCE, ()), body, calls)

    @asynccontextmanager
    async def admitted(
        self, response: Responding, prompt_tokens: int, max_tokens: int
    ) -> AsyncGenerator[Hold, None]:
        """One response admitted under the key's limits (the 429 `ApiError` when spent),
        settled with what the model used on every path."""
        state, principal = self.caller.state, self.caller.principal
        facts = new_facts(ENDPOINT, principal, self.caller.headers)
        target = self.stages.planned_llm_target
        with state.engine.usage.refusing(facts, target):
            hold = await state.admission.admit(
                principal, ServiceOptions(), prompt_tokens=prompt_tokens, max_tokens=max_tokens
            )
        try:
            yield hold
        finally:
            metered = response.metered
            usage = Usage(metered.prompt_tokens, metered.completion_tokens)
            state.engine.settle(facts, metered.llm_target or target, hold, usage)
            hold.release()


async def plan_cascade(caller: Caller, base: Template, config: SessionConfig) -> EngineCascade:
    """Plan every stage of `base` under `config` (the stages' 4xx `ApiError`s)."""
    caller.principal.require("audio")
    template = session_template(base, config)
    stages = await prepare_stages(
        caller.state, caller.principal, caller.headers, template, SILENCE, endpoint=ENDPOINT
    )
    return EngineCascade(caller, template, stages)


@attrs.define
class ToolCalls:
    """The function calls of one answer, assembled from the model's streamed pieces."""

    calls: dict[int, dict[str, str]] = attrs.field(factory=dict)

    def add(self, delta: ToolCallDelta) -> None:
        call = self.calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
        call["id"] = delta.id or call["id"]
        call["name"] = delta.name or call["name"]
        call["arguments"] += delta.arguments

    def finished(self) -> list[dict[str, str]]:
        return [self.calls[index] for index in sorted(self.calls) if self.calls[index]["name"]]


class ResponseStages:
    """The `gateway.pipelines.flow.Stages` of one response: the model on the session's
    conversation and tools (its calls collected aside), speech as the template says."""

    def __init__(self, stages: EngineStages, body: dict[str, Any], calls: ToolCalls) -> None:
        self._stages, self._body, self.calls = stages, body, calls

    @property
    def metered(self) -> Metered:
        return self._stages.metered

    def transcribe(self) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]:
        return self._stages.transcribe()

    def complete(self, transcript: str) -> AbstractAsyncContextManager[Opened[str]]:
        return self._stages.converse(self._body, self.calls.add)

    def speak(self, sentence: str) -> AbstractAsyncContextManager[Opened[bytes]]:
        return self._stages.speak(sentence)

    def voice_line(self) -> AbstractAsyncContextManager[Line] | None:
        return self._stages.voice_line()

    def usage(self) -> Mapping[str, Any]:
        return self._stages.usage()
