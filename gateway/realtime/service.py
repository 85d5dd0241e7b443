"""Opening a Realtime session: who calls, which cascade answers `?model=`, and the first
configuration.

`?model=` names a pipeline template (by id or name, the workspace's or a built-in one) or
a realtime model id of the catalog (`gpt-realtime`...), which the template of the
`realtime_template` setting answers. `?intent=transcription` opens a transcription
session; its `?model=` may name the transcription model. Everything is planned before
the socket is accepted, so a refusal is one clear `error` event.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from gateway.pipelines.templates import Overrides, Template, with_overrides
from gateway.platform.errors import ApiError
from gateway.realtime.cascade import Caller, Cascade, base_template, plan_cascade
from gateway.realtime.config import (
    DEFAULT_VOICE,
    AudioFormat,
    SessionConfig,
    Transcription,
    TurnDetection,
)
from gateway.realtime.legacy import KEEP

SUBPROTOCOL_KEY = "openai-insecure-api-key."
SUBPROTOCOL_BETA = "openai-beta.realtime-v1"


@attrs.frozen
class Opening:
    """What a session starts with."""

    config: SessionConfig
    base: Template
    cascade: Cascade


def credential(authorization: str | None, subprotocols: list[str]) -> str | None:
    """The `Authorization` header, or the key a browser puts in a subprotocol."""
    if authorization:
        return authorization
    for protocol in subprotocols:
        if protocol.startswith(SUBPROTOCOL_KEY):
            return "Bearer " + protocol[len(SUBPROTOCOL_KEY) :]
    return None


def wants_beta(headers: Mapping[str, str], subprotocols: list[str]) -> bool:
    beta = (headers.get("openai-beta") or "").replace(" ", "").lower()
    return "realtime=v1" in beta.split(",") or SUBPROTOCOL_BETA in subprotocols


def chosen_subprotocol(subprotocols: list[str]) -> str | None:
    """The subprotocol the handshake answers with: `realtime` when the client offered it
    (a browser's SDK offers it beside the key)."""
    return "realtime" if "realtime" in subprotocols else None


async def open_session(caller: Caller, model: str | None, intent: str | None) -> Opening:
    """Resolve `?model=` and `?intent=` and plan the cascade (the `ApiError`s of a model
    or template nobody knows, or that the key may not use)."""
    settings = caller.state.settings
    if intent not in (None, "", "transcription"):
        raise ApiError(400, "invalid_value", "'intent' must be 'transcription'.", param="intent")
    if intent == "transcription":
        return await _transcription(caller, model)
    if not model or _realtime_model(caller, model):
        base = await base_template(caller, settings.realtime_template)
    else:
        base = await _template_or_404(caller, model)
    config = SessionConfig(
        kind="realtime", model=model or base.id, instructions=base.llm.system_prompt
    )
    return Opening(config, base, await plan_cascade(caller, base, config))


async def _transcription(caller: Caller, model: str | None) -> Opening:
    base = await base_template(caller, caller.state.settings.realtime_template)
    info = caller.state.catalog.model(model) if model else None
    if model and (info is None or info.type != "transcription"):
        base = await _template_or_404(caller, model)
    stt_model = (
        model if model and info is not None and info.type == "transcription" else base.stt.model
    )
    transcription = Transcription(stt_model, base.stt.language)
    config = SessionConfig(
        kind="transcription",
        model=stt_model,
        transcription=transcription,
        output_modalities=("text",),
    )
    return Opening(config, base, await plan_cascade(caller, base, config))


def _realtime_model(caller: Caller, model: str) -> bool:
    info = caller.state.catalog.model(model)
    return info is not None and info.type == "realtime"


async def _template_or_404(caller: Caller, model: str) -> Template:
    try:
        return await base_template(caller, model)
    except ApiError as error:
        if error.status != 404:
            raise
    raise ApiError(
        404,
        "model_not_found",
        f"The model '{model}' is neither a realtime model nor a pipeline template.",
        param="model",
    )


def legacy_config(template: Template, input_format: AudioFormat, vad: bool) -> SessionConfig:
    """A `/v1/audio/sessions` session's configuration: its template's prompt, voice and
    length; the model is the template's id (what the legacy protocol shows)."""
    tts = template.tts
    return SessionConfig(
        kind="realtime",
        model=template.id,
        instructions=template.llm.system_prompt,
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
        return Opening(config, template, await plan_cascade(self.caller, template, config))

    async def retemplate(
        self, template_id: str | None, context: str | None, config: SessionConfig
    ) -> tuple[Cascade, SessionConfig]:
        wanted = self.context if context == KEEP else context
        template = await self._template(template_id or config.model, wanted)
        changed = legacy_config(template, config.input_format, config.turn_detection is not None)
        cascade = await plan_cascade(self.caller, template, changed)
        self.context = wanted
        return cascade, changed

    async def _template(self, template_id: str, context: str | None = KEEP) -> Template:
        wanted = self.context if context == KEEP else context
        found = await base_template(self.caller, template_id)
        return with_overrides(found, Overrides(), wanted)
