"""The `/v1/audio/sessions` dialect of the session core: the gateway's first voice-session
protocol, kept for the clients that speak it (docs/pipelines.md, "Voice sessions").

client -> gateway
    session.update            {session: {template?, context?, vad?, input_audio_format?,
                                         sample_rate?, stt?: {prompt}}}  (template,
                                         context and the transcription prompt from the
                                         next turn)
    input_audio_buffer.append {audio: base64, PCM16 mono at the session's sample rate
                               (16 kHz unless `?sample_rate=` or `session.update` says)}
    input_audio_buffer.commit   end the turn now (without VAD, the only way); answered
    input_audio_buffer.clear    drop the buffered audio
    response.cancel             stop the answer being given

gateway -> client
    session.created / session.updated {session: {template, vad, stt?: {prompt}}}
    input_audio_buffer.speech_started / speech_stopped / committed
    transcription.partial / transcription.final {text}
    response.created {response_id}
    response.text.delta {response_id, delta}
    response.audio.delta {response_id, delta: base64 PCM16 mono 24 kHz}
    response.done {response_id, status: completed|cancelled|failed, usage?, latency?}
    error {error: {message, code}}

`LegacyWire` translates both ways; everything else is the Realtime core's. Its events
carry no `event_id` (they never did), and the core's events this protocol has no name
for are not sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from gateway.kernels.voice.session import KEEP
from gateway.realtime.events import RealtimeError, json_object

MAX_LEGACY_EVENT_CHARS = 1024 * 1024
LEGACY_CLIENT_EVENTS = frozenset(
    {
        "session.update",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "input_audio_buffer.clear",
        "response.cancel",
    }
)
# Refusals the old protocol never sent: it ignored an empty commit and a needless cancel.
SILENT_CODES = frozenset({"input_audio_buffer_commit_empty", "response_cancel_not_active"})
# The old protocol's codes for the core's refusals.
LEGACY_CODES: Mapping[str, str] = {
    "invalid_json": "invalid_event",
    "input_audio_buffer_too_large": "turn_too_long",
}
LEGACY_FORMATS: Mapping[str, str] = {
    "pcm16": "audio/pcm",
    "g711_ulaw": "audio/pcmu",
    "g711_alaw": "audio/pcma",
}
RENAMED: Mapping[str, str] = {
    "conversation.item.input_audio_transcription.delta": "transcription.partial",
    "conversation.item.input_audio_transcription.completed": "transcription.final",
    "response.output_audio_transcript.delta": "response.text.delta",
    "response.output_text.delta": "response.text.delta",
    "response.output_audio.delta": "response.audio.delta",
}
PLAIN = frozenset(
    {
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
    }
)


class LegacyWire:
    """Reads and writes the `/v1/audio/sessions` protocol (see the module docstring)."""

    beta = False

    def client_event(self, raw: str | bytes) -> dict[str, Any]:
        event = json_object(raw, MAX_LEGACY_EVENT_CHARS)  # invalid_json: invalid_event
        kind = event.get("type")
        if kind not in LEGACY_CLIENT_EVENTS:
            raise RealtimeError("invalid_event", f"Unknown event type {kind!r}.")
        if kind == "session.update":
            return {"type": "session.retemplate", "session": _retemplate(event.get("session"))}
        return event

    def render(self, event: Mapping[str, Any]) -> bytes | None:
        body = _legacy(event)
        return None if body is None else orjson.dumps(body)


def _retemplate(session: Any) -> dict[str, Any]:
    """A legacy `session.update`'s fields, checked; the core applies them all or none."""
    if not isinstance(session, dict):
        raise RealtimeError("invalid_event", "'session' must be an object.")
    update: dict[str, Any] = {}
    if "vad" in session:
        if not isinstance(session["vad"], bool):
            raise RealtimeError("invalid_event", "'session.vad' must be a boolean.")
        update["vad"] = session["vad"]
    if "template" in session or "context" in session:
        template, context = session.get("template"), session.get("context")
        if "template" in session and (not isinstance(template, str) or not template):
            raise RealtimeError("invalid_event", "'session.template' must be a template id.")
        if context is not None and not isinstance(context, str):
            raise RealtimeError("invalid_event", "'session.context' must be a string.")
        update["template"] = template
        update["context"] = context if "context" in session else KEEP
    fmt, rate = session.get("input_audio_format"), session.get("sample_rate")
    if fmt is not None or rate is not None:
        update["format"] = input_format(fmt, rate)
    if "stt" in session:
        update["stt_prompt"] = _stt_prompt(session["stt"])
    return update


def _stt_prompt(stt: Any) -> str | None:
    """`session.stt`: the transcription `prompt` (words and names to expect, as the
    Realtime protocol's `audio.input.transcription.prompt`); null or empty clears it."""
    prompt = stt.get("prompt") if isinstance(stt, dict) else None
    if not isinstance(stt, dict) or set(stt) - {"prompt"} or not isinstance(prompt, str | None):
        raise RealtimeError("invalid_event", "'session.stt' must be {prompt: a string or null}.")
    return prompt or None


def input_format(fmt: Any, rate: Any) -> dict[str, Any]:
    """The GA format object of a legacy `input_audio_format` and `sample_rate`
    (PCM16 at 16 kHz when neither is given)."""
    kind = LEGACY_FORMATS.get(fmt or "pcm16")
    if kind is None:
        raise RealtimeError(
            "invalid_event", "'input_audio_format' must be 'pcm16', 'g711_ulaw' or 'g711_alaw'."
        )
    if kind != "audio/pcm":
        return {"type": kind}
    if isinstance(rate, str) and rate.isdigit():
        rate = int(rate)
    return {"type": kind, "rate": 16_000 if rate is None else rate}


def _legacy(event: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = event["type"]
    if kind in ("session.created", "session.updated"):
        session = event["session"]
        heard = session.get("audio", {}).get("input", {})
        vad = heard.get("turn_detection") is not None
        body = {"template": session.get("model"), "vad": vad}
        prompt = (heard.get("transcription") or {}).get("prompt")
        return {"type": kind, "session": body | ({"stt": {"prompt": prompt}} if prompt else {})}
    if kind in PLAIN:
        return {"type": kind}
    if kind == "error":
        return _error(event["error"])
    if kind in RENAMED:
        return _renamed(RENAMED[kind], event)
    if kind == "response.created":
        return {"type": kind, "response_id": event["response"]["id"]}
    if kind == "response.done":
        return _done(event["response"])
    return None


def _renamed(name: str, event: Mapping[str, Any]) -> dict[str, Any]:
    if name.startswith("transcription."):
        text = event.get("delta", event.get("transcript", ""))
        return {"type": name, "text": text}
    return {"type": name, "response_id": event["response_id"], "delta": event["delta"]}


def _error(error: Mapping[str, Any]) -> dict[str, Any] | None:
    """The core's `error` event in the old protocol: its code, unless renamed or silenced
    (the core's codes are made where it refuses, `RealtimeError` or `ApiError`)."""
    code = error["code"]
    if code in SILENT_CODES:
        return None
    if code == "invalid_value" and error.get("param") == "audio":
        code = "invalid_audio"
    return {
        "type": "error",
        "error": {"message": error.get("message"), "code": LEGACY_CODES.get(code, code)},
    }


def _done(response: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "response.done",
        "response_id": response["id"],
        "status": response["status"],
    }
    usage = response.get("usage")
    if usage is not None:
        body["usage"] = usage.get("gateway", usage)
    if response.get("latency"):
        body["latency"] = response["latency"]
    return body
