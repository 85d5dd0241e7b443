"""Voice sessions' cascades over pipeline templates: the pipelines family's side of the
voice kernel's `SessionPlanner` (`gateway.kernels.voice.session`).

A session's cascade is a template's speech-to-text, language model and text-to-speech,
each through the one upstream engine (fallbacks, deadlines, limits, usage record, cost,
energy and carbon), with the session's configuration laid over the template
(instructions, voice, speed, transcription model, output length). Every stage is planned
when the session opens or is updated, so an unknown model, a voice no candidate has or a
model the key may not use is refused then, not in the middle of an answer; each response
is admitted under the key's limits and settled with the model's real tokens.

`GET /v1/realtime`'s `?model=` names a pipeline template (by id or name, the workspace's
or a built-in one) or a realtime model id of the catalog (`gpt-realtime`...), which the
template of the `realtime_template` setting answers; `?intent=transcription` opens a
transcription session, whose `?model=` may name the transcription model.
`/v1/audio/sessions` names its template and context.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import attrs

from gateway.kernels.voice.flow import Line, Opened
from gateway.kernels.voice.session import (
    DEFAULT_VOICE,
    KEEP,
    AudioFormat,
    LanguageModel,
    Opening,
    Responding,
    SessionConfig,
    ToolCalls,
    Transcription,
    TurnDetection,
)
from gateway.pipelines.capabilities import PreparedStages
from gateway.pipelines.custom import find_template
from gateway.pipelines.metered import Metered
from gateway.pipelines.services import PipelinesServices
from gateway.pipelines.templates import Overrides, Template, with_overrides
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.upstream.facts import new_facts
from gateway.upstream.limits import Hold
from gateway.upstream.options import ServiceOptions
from providers.audio_types import AudioClip, TranscriptEvent
from providers.types import Usage
from streams.tape import Tape

ENDPOINT = "realtime"  # every stage's usage record
SILENCE = AudioClip(b"", "wav", 0.0, "turn.wav")


@attrs.frozen
class Caller:
    """Who the session serves."""

    services: PipelinesServices
    principal: Principal
    headers: Mapping[str, str]


def session_template(base: Template, config: SessionConfig) -> Template:
    """`base` with the session's configuration laid over it. Pure."""
    stt = base.stt
    if config.transcription is not None:
        asked = config.transcription
        language = asked.language or stt.language
        stt = attrs.evolve(stt, model=asked.model, language=language, prompt=asked.prompt)
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


@attrs.frozen
class EngineCascade:
    """One configuration's stages, planned through the engine (`Cascade`)."""

    caller: Caller
    template: Template
    stages: PreparedStages

    @property
    def llm(self) -> LanguageModel:
        llm = self.template.llm
        return LanguageModel(llm.model, llm.system_prompt, llm.temperature)

    def transcribe(self, clip: AudioClip) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]:
        return self.stages.with_clip(clip, ()).transcribe()

    def transcribe_live(self, tape: Tape) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]:
        return self.stages.with_clip(SILENCE, ()).transcribe_live(tape)

    def response(self, body: dict[str, Any], calls: ToolCalls) -> ResponseStages:
        return ResponseStages(self.stages.with_clip(SILENCE, ()), body, calls)

    @asynccontextmanager
    async def admitted(
        self, response: Responding, prompt_tokens: int, max_tokens: int
    ) -> AsyncGenerator[Hold, None]:
        """One response admitted under the key's limits (the 429 `ApiError` when spent),
        settled with what the model used on every path."""
        services, principal = self.caller.services, self.caller.principal
        facts = new_facts(ENDPOINT, principal, self.caller.headers)
        target = self.stages.planned_llm_target
        with services.engine.usage.refusing(facts, target):
            hold = await services.admission.admit(
                principal, ServiceOptions(), prompt_tokens=prompt_tokens, max_tokens=max_tokens
            )
        try:
            yield hold
        finally:
            metered = response.metered
            used = Usage(metered.prompt_tokens, metered.completion_tokens)
            llm_target = metered.llm_target if isinstance(metered, Metered) else None
            services.engine.settle(facts, llm_target or target, hold, used)
            hold.release()


class ResponseStages:
    """The `Stages` of one response: the model on the session's conversation and tools
    (its calls collected aside), speech as the template says."""

    def __init__(self, stages: PreparedStages, body: dict[str, Any], calls: ToolCalls) -> None:
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


async def plan_cascade(caller: Caller, base: Template, config: SessionConfig) -> EngineCascade:
    """Plan every stage of `base` under `config` (the stages' 4xx `ApiError`s)."""
    caller.principal.require("audio")
    template = session_template(base, config)
    stages = await caller.services.voice.prepare_stages(
        caller.principal, caller.headers, template, SILENCE, endpoint=ENDPOINT
    )
    return EngineCascade(caller, template, stages)


def _opening(caller: Caller, base: Template, config: SessionConfig, cascade: Any) -> Opening:
    async def replan(changed: SessionConfig) -> EngineCascade:
        return await plan_cascade(caller, base, changed)

    return Opening(config, cascade, replan)


class PipelineSessions:
    """The `SessionPlanner` over pipeline templates (see the module docstring)."""

    def __init__(self, services: PipelinesServices) -> None:
        self._services = services

    async def realtime(
        self,
        principal: Principal,
        headers: Mapping[str, str],
        model: str | None,
        intent: str | None,
    ) -> Opening:
        caller = Caller(self._services, principal, headers)
        if intent not in (None, "", "transcription"):
            raise ApiError(
                400, "invalid_value", "'intent' must be 'transcription'.", param="intent"
            )
        if intent == "transcription":
            return await _transcription(caller, model)
        default = self._services.settings.realtime_template
        if not model or _realtime_model(caller, model):
            base = await _template(caller, default)
        else:
            base = await _template_or_404(caller, model)
        config = SessionConfig(
            kind="realtime", model=model or base.id, instructions=base.llm.system_prompt
        )
        return _opening(caller, base, config, await plan_cascade(caller, base, config))

    async def legacy(
        self,
        principal: Principal,
        headers: Mapping[str, str],
        template: str,
        context: str | None,
        input_format: AudioFormat,
    ) -> Opening:
        templates = LegacyTemplates(Caller(self._services, principal, headers), context)
        return await templates.open(template, input_format)


async def _transcription(caller: Caller, model: str | None) -> Opening:
    base = await _template(caller, caller.services.settings.realtime_template)
    info = caller.services.catalog.model(model) if model else None
    if model and (info is None or info.type != "transcription"):
        base = await _template_or_404(caller, model)
    stt_model = model if model and info is not None and info.type == "transcription" else None
    transcription = Transcription(stt_model or base.stt.model, base.stt.language)
    config = SessionConfig(
        kind="transcription",
        model=transcription.model,
        transcription=transcription,
        output_modalities=("text",),
    )
    return _opening(caller, base, config, await plan_cascade(caller, base, config))


def _realtime_model(caller: Caller, model: str) -> bool:
    info = caller.services.catalog.model(model)
    return info is not None and info.type == "realtime"


async def _template(caller: Caller, name: str) -> Template:
    """A pipeline template by id or name (404 `template_not_found` otherwise)."""
    return await find_template(caller.services, caller.principal.workspace_id, name)


async def _template_or_404(caller: Caller, model: str) -> Template:
    try:
        return await _template(caller, model)
    except ApiError as error:
        if error.status != 404:
            raise
    raise ApiError(
        404,
        "model_not_found",
        f"The model '{model}' is neither a realtime model nor a pipeline template.",
        param="model",
    )


def legacy_config(
    template: Template, input_format: AudioFormat, vad: bool, stt_prompt: str | None = None
) -> SessionConfig:
    """A `/v1/audio/sessions` session's configuration: its template's prompt, voice and
    length, its speech-to-text model with the session's transcription prompt (`stt.prompt`
    of its `session.update`); the model is the template's id (what the legacy protocol
    shows)."""
    tts = template.tts
    return SessionConfig(
        kind="realtime",
        model=template.id,
        instructions=template.llm.system_prompt,
        transcription=Transcription(template.stt.model, template.stt.language, stt_prompt),
        output_modalities=("audio",) if tts is not None else ("text",),
        input_format=input_format,
        turn_detection=TurnDetection() if vad else None,
        voice=tts.voice if tts is not None else DEFAULT_VOICE,
        speed=tts.speed if tts is not None else 1.0,
        max_output_tokens=template.llm.max_tokens,
    )


@attrs.define
class LegacyTemplates:
    """A `/v1/audio/sessions` session's template and context, changed by its
    `session.update` (the context stays until another is given)."""

    caller: Caller
    context: str | None

    async def open(self, template_id: str, input_format: AudioFormat) -> Opening:
        template = await self._template(template_id)
        config = legacy_config(template, input_format, vad=True)
        cascade = await plan_cascade(self.caller, template, config)
        opening = _opening(self.caller, template, config, cascade)
        return attrs.evolve(opening, retemplate=self.retemplate)

    async def retemplate(
        self, template_id: str | None, context: str | None, config: SessionConfig
    ) -> tuple[EngineCascade, SessionConfig]:
        wanted = self.context if context == KEEP else context
        template = await self._template(template_id or config.model, wanted)
        prompt = config.transcription.prompt if config.transcription is not None else None
        vad = config.turn_detection is not None
        changed = legacy_config(template, config.input_format, vad, prompt)
        cascade = await plan_cascade(self.caller, template, changed)
        self.context = wanted
        return cascade, changed

    async def _template(self, template_id: str, context: str | None = KEEP) -> Template:
        wanted = self.context if context == KEEP else context
        found = await _template(self.caller, template_id)
        return with_overrides(found, Overrides(), wanted)
