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

from gateway.pipelines.templates import Template
from gateway.platform.errors import ApiError
from gateway.realtime.cascade import Caller, Cascade, base_template, plan_cascade
from gateway.realtime.config import SessionConfig, Transcription

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
