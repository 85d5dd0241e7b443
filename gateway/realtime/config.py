"""A Realtime session's configuration and `session.update`: pure validation and rendering.

`apply_update` checks every field of an update before anything changes (a refused update
changes nothing) and takes both shapes: the GA one (`type`, `audio.input.format`,
`audio.output.voice`, `output_modalities`, `max_output_tokens`) and the beta's flat one
(`modalities`, `voice`, `input_audio_format: "pcm16"`, `max_response_output_tokens`).
`render_session` writes the GA shape; `events.beta_session` the beta's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway.kernels.voice.session import (
    DEFAULT_VOICE,
    EAGERNESS_SILENCE_MS,
    AudioFormat,
    SessionConfig,
    Transcription,
    TurnDetection,
)
from gateway.realtime.events import RealtimeError

__all__ = [
    "DEFAULT_VOICE",
    "AudioFormat",
    "SessionConfig",
    "Transcription",
    "TurnDetection",
    "apply_update",
    "render_session",
]

FORMAT_TYPES = ("audio/pcm", "audio/pcmu", "audio/pcma")
BETA_FORMATS: Mapping[str, tuple[str, int]] = {
    "pcm16": ("audio/pcm", 24_000),
    "g711_ulaw": ("audio/pcmu", 8_000),
    "g711_alaw": ("audio/pcma", 8_000),
}
PCM_RATES = (8_000, 16_000, 24_000, 48_000)


def render_session(config: SessionConfig, session_id: str) -> dict[str, Any]:
    """The GA `session` object of `session.created` / `session.updated`."""
    audio_in: dict[str, Any] = {
        "format": config.input_format.body(),
        "transcription": config.transcription.body() if config.transcription else None,
        "turn_detection": config.turn_detection.body() if config.turn_detection else None,
        "noise_reduction": None,
    }
    body: dict[str, Any] = {"type": config.kind, "object": "realtime.session", "id": session_id}
    if config.kind == "transcription":
        return body | {"audio": {"input": audio_in}, "include": None}
    return body | {
        "model": config.model,
        "output_modalities": list(config.output_modalities),
        "instructions": config.instructions,
        "audio": {
            "input": audio_in,
            "output": {
                "format": config.output_format.body(),
                "voice": config.voice,
                "speed": config.speed,
            },
        },
        "tools": [dict(t) for t in config.tools],
        "tool_choice": config.tool_choice,
        "max_output_tokens": "inf"
        if config.max_output_tokens is None
        else config.max_output_tokens,
        "tracing": None,
        "truncation": "auto",
        "prompt": None,
    }


def apply_update(config: SessionConfig, session: Any) -> SessionConfig:
    """`config` with a `session.update`'s `session` applied (RealtimeError, nothing
    changed, when a field is wrong)."""
    if not isinstance(session, Mapping):
        raise RealtimeError("invalid_value", "'session' must be an object.", param="session")
    kind = session.get("type", config.kind)
    if kind not in ("realtime", "transcription"):
        raise _invalid("session.type", "'realtime' or 'transcription'")
    changes: dict[str, Any] = {"kind": kind}
    changes |= _audio_changes(config, session)
    changes |= _model_changes(session)
    return attrs.evolve(config, **changes)


def _audio_changes(config: SessionConfig, session: Mapping[str, Any]) -> dict[str, Any]:
    audio = _object(session, "audio", "session.audio")
    audio_in = _object(audio, "input", "session.audio.input")
    audio_out = _object(audio, "output", "session.audio.output")
    changes: dict[str, Any] = {}
    for fmt, key, where in (
        (audio_in.get("format", session.get("input_audio_format")), "input_format", "input"),
        (audio_out.get("format", session.get("output_audio_format")), "output_format", "output"),
    ):
        if fmt is not None:
            changes[key] = parse_format(fmt, f"session.audio.{where}.format")
    if "transcription" in audio_in or "input_audio_transcription" in session:
        raw = audio_in.get("transcription", session.get("input_audio_transcription"))
        changes["transcription"] = _transcription(raw, config)
    if "turn_detection" in audio_in or "turn_detection" in session:
        raw = audio_in.get("turn_detection", session.get("turn_detection"))
        changes["turn_detection"] = parse_turn_detection(raw)
    voice = audio_out.get("voice", session.get("voice"))
    if voice is not None:
        changes["voice"] = _string(voice, "session.audio.output.voice")
    speed = audio_out.get("speed", session.get("speed"))
    if speed is not None:
        changes["speed"] = _number(speed, "session.audio.output.speed", 0.25, 1.5)
    return changes


def _model_changes(session: Mapping[str, Any]) -> dict[str, Any]:
    changes = model_changes(session, "session")
    if "instructions" in session:
        changes["instructions"] = _string(session["instructions"] or "", "session.instructions")
    return changes


def model_changes(fields: Mapping[str, Any], where: str) -> dict[str, Any]:
    """What the model answers with, from a `session.update`'s `session` or a
    `response.create`'s `response` (`where` names it in errors): modalities, tools, tool
    choice, length, temperature; GA and beta names."""
    changes: dict[str, Any] = {}
    modalities = fields.get("output_modalities", fields.get("modalities"))
    if modalities is not None:
        changes["output_modalities"] = parse_modalities(modalities, f"{where}.output_modalities")
    if "tools" in fields:
        changes["tools"] = parse_tools(fields["tools"], f"{where}.tools")
    if "tool_choice" in fields:
        changes["tool_choice"] = parse_tool_choice(fields["tool_choice"], f"{where}.tool_choice")
    limit = fields.get("max_output_tokens", fields.get("max_response_output_tokens"))
    if limit is not None:
        changes["max_output_tokens"] = parse_max_tokens(limit, f"{where}.max_output_tokens")
    if fields.get("temperature") is not None:
        changes["temperature"] = _number(fields["temperature"], f"{where}.temperature", 0.0, 2.0)
    return changes


def parse_format(value: Any, where: str) -> AudioFormat:
    """A GA format object or a beta format name."""
    if isinstance(value, str) and value in BETA_FORMATS:
        return AudioFormat(*BETA_FORMATS[value])
    if not isinstance(value, Mapping) or value.get("type") not in FORMAT_TYPES:
        raise _invalid(where, "{type: 'audio/pcm', rate: 24000}, 'audio/pcmu' or 'audio/pcma'")
    if value["type"] != "audio/pcm":
        return AudioFormat(value["type"], 8_000)
    rate = value.get("rate", 24_000)
    if rate not in PCM_RATES:
        raise _invalid(f"{where}.rate", f"one of {', '.join(map(str, PCM_RATES))}")
    return AudioFormat("audio/pcm", rate)


def _transcription(raw: Any, config: SessionConfig) -> Transcription | None:
    if raw is None:
        return None
    where = "session.audio.input.transcription"
    if not isinstance(raw, Mapping):
        raise _invalid(where, "an object with a 'model', or null")
    model = raw.get("model", config.transcription.model if config.transcription else None)
    language, prompt = raw.get("language"), raw.get("prompt")
    for value, name in ((language, "language"), (prompt, "prompt")):
        if value is not None and not isinstance(value, str):
            raise _invalid(f"{where}.{name}", "a string")
    return Transcription(_string(model, f"{where}.model"), language or None, prompt or None)


def parse_turn_detection(raw: Any) -> TurnDetection | None:
    where = "session.audio.input.turn_detection"
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or raw.get("type") not in ("server_vad", "semantic_vad"):
        raise _invalid(where, "{type: 'server_vad' | 'semantic_vad', ...} or null")
    base = TurnDetection(type=raw["type"])
    changes: dict[str, Any] = {}
    if raw.get("threshold") is not None:
        changes["threshold"] = _number(raw["threshold"], f"{where}.threshold", 0.0, 1.0)
    for name in ("prefix_padding_ms", "silence_duration_ms"):
        if raw.get(name) is not None:
            changes[name] = int(_number(raw[name], f"{where}.{name}", 0, 10_000))
    for name in ("create_response", "interrupt_response"):
        if raw.get(name) is not None:
            if not isinstance(raw[name], bool):
                raise _invalid(f"{where}.{name}", "a boolean")
            changes[name] = raw[name]
    eagerness = raw.get("eagerness")
    if eagerness is not None:
        if eagerness not in EAGERNESS_SILENCE_MS:
            raise _invalid(f"{where}.eagerness", "'low', 'medium', 'high' or 'auto'")
        changes["eagerness"] = eagerness
    return attrs.evolve(base, **changes)


def parse_modalities(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not set(value) <= {"audio", "text"}:
        raise _invalid(where, "['audio'] or ['text']")
    return ("audio",) if "audio" in value else ("text",)


def parse_tools(value: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, list):
        raise _invalid(where, "an array of functions")
    tools = []
    for index, tool in enumerate(value):
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            raise _invalid(f"{where}[{index}]", "{type: 'function', name, parameters}")
        _string(tool.get("name"), f"{where}[{index}].name")
        parameters = tool.get("parameters")
        if parameters is not None and not isinstance(parameters, Mapping):
            raise _invalid(f"{where}[{index}].parameters", "a JSON schema object")
        tools.append({"type": "function"} | dict(tool))
    return tuple(tools)


def parse_tool_choice(value: Any, where: str) -> str | Mapping[str, Any]:
    if value in ("auto", "none", "required"):
        return str(value)
    if isinstance(value, Mapping) and isinstance(value.get("name"), str):
        return {"type": "function", "name": value["name"]}
    raise _invalid(where, "'auto', 'none', 'required' or {type: 'function', name}")


def parse_max_tokens(value: Any, where: str) -> int | None:
    if value == "inf":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
        raise _invalid(where, "an integer from 1 to 4096, or 'inf'")
    return value


def _object(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid(where, "an object")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(where, "a non-empty string")
    return value


def _number(value: Any, where: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _invalid(where, f"a number from {low:g} to {high:g}")
    return float(value)


def _invalid(param: str, expected: str) -> RealtimeError:
    return RealtimeError("invalid_value", f"'{param}' must be {expected}.", param=param)
