"""The OpenAI Realtime protocol's events, read and written: pure, no I/O.

The session core speaks the GA event names. A client that sends `OpenAI-Beta:
realtime=v1` on the handshake gets the beta names (`response.audio.delta`,
`conversation.item.created`, ...) and the beta session shape; `Dialect.render` does the
renaming, so nothing else in the family knows there are two. Every server event gets an
`event_id` (strict clients such as Pipecat refuse an event without one).

A client event that cannot be read is a `RealtimeError`: the session answers it with an
`error` event that names the client's `event_id`, and goes on.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import attrs
import orjson

MAX_EVENT_CHARS = 16 * 1024 * 1024  # one client event (an append of ~8 minutes at 24 kHz)

# GA name -> beta name, for the server events that were renamed at GA.
BETA_NAMES: Mapping[str, str] = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "conversation.item.added": "conversation.item.created",
}
# GA server events that the beta protocol does not have.
NOT_IN_BETA = frozenset({"conversation.item.done"})
# Content part types renamed at GA (the beta's `audio`/`text` parts of an assistant item).
BETA_PARTS: Mapping[str, str] = {"output_audio": "audio", "output_text": "text"}

CLIENT_EVENTS = frozenset(
    {
        "session.update",
        "transcription_session.update",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "input_audio_buffer.clear",
        "conversation.item.create",
        "conversation.item.delete",
        "conversation.item.retrieve",
        "conversation.item.truncate",
        "response.create",
        "response.cancel",
        "output_audio_buffer.clear",
    }
)


class RealtimeError(Exception):
    """A client event the session refuses: sent back as an `error` event."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        param: str | None = None,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.param, self.type = code, message, param, type

    def body(self, event_id: str | None) -> dict[str, Any]:
        return {
            "type": self.type,
            "code": self.code,
            "message": self.message,
            "param": self.param,
            "event_id": event_id,
        }


def new_id(prefix: str) -> str:
    """An id in OpenAI's style (`item_`, `resp_`, `event_`...): a prefix and 20 characters."""
    return f"{prefix}_{secrets.token_hex(10)}"


def parse_client_event(raw: str | bytes) -> dict[str, Any]:
    """A client event: a JSON object with a known `type` (RealtimeError otherwise)."""
    event = json_object(raw, MAX_EVENT_CHARS)
    kind = event.get("type")
    if kind not in CLIENT_EVENTS:
        raise RealtimeError("invalid_event", f"Unknown event type {kind!r}.", param="type")
    return event


def json_object(raw: str | bytes, max_chars: int) -> dict[str, Any]:
    """A text message that is a JSON object of at most `max_chars` (RealtimeError:
    `invalid_json` when it is not JSON, `invalid_event` otherwise)."""
    if isinstance(raw, bytes):
        raise RealtimeError("invalid_event", "Events are JSON text messages, not binary ones.")
    if len(raw) > max_chars:
        raise RealtimeError("invalid_event", f"An event is at most {max_chars} characters.")
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise RealtimeError("invalid_json", "The event is not valid JSON.") from None
    if not isinstance(event, dict):
        raise RealtimeError("invalid_event", "An event is a JSON object with a 'type'.")
    return event


def client_event_id(event: Mapping[str, Any]) -> str | None:
    value = event.get("event_id")
    return value if isinstance(value, str) else None


class Wire(Protocol):
    """How one connection's events are read and written (`Dialect`, or the
    `/v1/audio/sessions` protocol's `legacy.LegacyWire`)."""

    def client_event(self, raw: str | bytes) -> dict[str, Any]: ...

    def render(self, event: Mapping[str, Any]) -> bytes | None: ...


@attrs.define
class Dialect:
    """The OpenAI Realtime protocol: GA or beta names, each server event with a fresh
    `event_id`."""

    beta: bool = False
    _ids: Iterator[int] = attrs.field(factory=itertools.count)
    _prefix: str = attrs.field(factory=lambda: f"event_{secrets.token_hex(6)}")

    def client_event(self, raw: str | bytes) -> dict[str, Any]:
        return parse_client_event(raw)

    def render(self, event: Mapping[str, Any]) -> bytes | None:
        """The event as JSON, or None when this dialect has no such event."""
        kind = event["type"]
        body = dict(event)
        if self.beta:
            if kind in NOT_IN_BETA:
                return None
            body = _to_beta(body)
        body["event_id"] = f"{self._prefix}{next(self._ids):06d}"
        return orjson.dumps(body)


def _to_beta(event: dict[str, Any]) -> dict[str, Any]:
    kind = event["type"]
    event["type"] = BETA_NAMES.get(kind, kind)
    for key in ("item", "part", "response"):
        if isinstance(event.get(key), dict):
            event[key] = _beta_object(event[key])
    if isinstance(event.get("session"), dict):
        event["session"] = beta_session(event["session"])
    return event


def _beta_object(value: dict[str, Any]) -> dict[str, Any]:
    """Content parts, items and responses with the beta's part types and field names."""
    out = dict(value)
    if out.get("type") in BETA_PARTS:
        out["type"] = BETA_PARTS[out["type"]]
    if isinstance(out.get("content"), list):
        out["content"] = [_beta_object(p) if isinstance(p, dict) else p for p in out["content"]]
    if isinstance(out.get("output"), list):
        out["output"] = [_beta_object(i) if isinstance(i, dict) else i for i in out["output"]]
    if "output_modalities" in out:
        out["modalities"] = out.pop("output_modalities")
    return out


def beta_session(session: Mapping[str, Any]) -> dict[str, Any]:
    """The GA session object in the beta's flat shape."""
    audio = session.get("audio") or {}
    audio_in, audio_out = audio.get("input") or {}, audio.get("output") or {}
    return {
        "id": session.get("id"),
        "object": "realtime.session",
        "model": session.get("model"),
        "modalities": session.get("output_modalities"),
        "instructions": session.get("instructions"),
        "voice": audio_out.get("voice"),
        "speed": audio_out.get("speed"),
        "input_audio_format": beta_format(audio_in.get("format")),
        "output_audio_format": beta_format(audio_out.get("format")),
        "input_audio_transcription": audio_in.get("transcription"),
        "turn_detection": audio_in.get("turn_detection"),
        "tools": session.get("tools"),
        "tool_choice": session.get("tool_choice"),
        "temperature": session.get("temperature", 0.8),
        "max_response_output_tokens": session.get("max_output_tokens"),
    }


def beta_format(fmt: Any) -> str | None:
    """A GA format object as the beta's name (`pcm16`, `g711_ulaw`, `g711_alaw`)."""
    if not isinstance(fmt, Mapping):
        return None
    return {"audio/pcm": "pcm16", "audio/pcmu": "g711_ulaw", "audio/pcma": "g711_alaw"}.get(
        str(fmt.get("type"))
    )
