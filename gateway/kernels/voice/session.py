"""The interface between a voice session's protocol and the cascade that answers it.

`SessionConfig` is what a session is configured with (in the Realtime protocol's terms;
`gateway.realtime.config` reads and writes it). A session runs on a `Cascade`:
recognition of a committed turn, and responses, each of which is the model on a chat
body (its function calls collected in `ToolCalls`) and speech. `SessionPlanner` opens the
cascades: the pipelines family implements it over its templates and the engine, the
realtime family uses it, and the composition root hands the one to the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

import attrs

from gateway.kernels.voice.flow import Opened, Stages
from gateway.platform.auth import Principal
from gateway.upstream.limits import Hold
from providers.audio_types import AudioClip, TranscriptEvent
from providers.types import ToolCallDelta
from streams.tape import Tape

Kind = Literal["realtime", "transcription"]
# semantic_vad's eagerness as the silence that ends a turn (a choice: docs/realtime.md).
EAGERNESS_SILENCE_MS: Mapping[str, int] = {"low": 800, "medium": 500, "auto": 500, "high": 300}
DEFAULT_VOICE = "marin"


@attrs.frozen
class AudioFormat:
    type: str = "audio/pcm"
    rate: int = 24_000

    def body(self) -> dict[str, Any]:
        return {"type": self.type, "rate": self.rate}


@attrs.frozen
class Transcription:
    model: str
    language: str | None = None
    prompt: str | None = None

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model}
        if self.language:
            body["language"] = self.language
        if self.prompt:
            body["prompt"] = self.prompt
        return body


@attrs.frozen
class TurnDetection:
    """`server_vad` or `semantic_vad`; None in the session is push-to-talk."""

    type: str = "server_vad"
    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    create_response: bool = True
    interrupt_response: bool = True
    eagerness: str = "auto"

    def body(self) -> dict[str, Any]:
        common = {
            "type": self.type,
            "create_response": self.create_response,
            "interrupt_response": self.interrupt_response,
        }
        if self.type == "semantic_vad":
            return common | {"eagerness": self.eagerness}
        return common | {
            "threshold": self.threshold,
            "prefix_padding_ms": self.prefix_padding_ms,
            "silence_duration_ms": self.silence_duration_ms,
        }

    @property
    def end_silence_ms(self) -> int:
        if self.type == "semantic_vad":
            return EAGERNESS_SILENCE_MS[self.eagerness]
        return self.silence_duration_ms


@attrs.frozen
class SessionConfig:
    kind: Kind
    model: str
    instructions: str = ""
    output_modalities: tuple[str, ...] = ("audio",)
    input_format: AudioFormat = AudioFormat()
    output_format: AudioFormat = AudioFormat()
    transcription: Transcription | None = None
    turn_detection: TurnDetection | None = TurnDetection()
    voice: str = DEFAULT_VOICE
    speed: float = 1.0
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: str | Mapping[str, Any] = "auto"
    max_output_tokens: int | None = None
    temperature: float | None = None

    @property
    def speaks(self) -> bool:
        return self.kind == "realtime" and "audio" in self.output_modalities


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


class Metering(Protocol):
    """What a response's stages used so far."""

    prompt_tokens: int
    completion_tokens: int

    def body(self) -> dict[str, Any]: ...


class Responding(Stages, Protocol):
    """One response's stages, and what they used so far."""

    @property
    def metered(self) -> Metering: ...


@attrs.frozen
class LanguageModel:
    """The model a cascade's responses ask, as the chat body names it."""

    model: str
    instructions: str = ""
    temperature: float | None = None


class Cascade(Protocol):
    """What a session runs on (the engine's, or a test's script)."""

    @property
    def llm(self) -> LanguageModel: ...

    def transcribe(
        self, clip: AudioClip
    ) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]: ...

    def transcribe_live(self, tape: Tape) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]:
        """The turn being recorded on `tape` (PCM16 mono, 16 kHz), recognised while it
        is spoken; its final event comes after the tape is closed."""
        ...

    def response(self, body: dict[str, Any], calls: ToolCalls) -> Responding: ...

    def admitted(
        self, response: Responding, prompt_tokens: int, max_tokens: int
    ) -> AbstractAsyncContextManager[Hold]: ...


# A legacy `session.update` that names no `context`: the session keeps its own.
KEEP = "\x00keep"
Replan = Callable[[SessionConfig], Awaitable[Cascade]]
# A legacy `session.update` naming a template (or a context): the template's cascade and
# the configuration under it; the template's `ApiError` (404) when it cannot be used.
Retemplate = Callable[
    [str | None, str | None, SessionConfig], Awaitable[tuple[Cascade, SessionConfig]]
]


@attrs.frozen
class Opening:
    """What a session starts with: its configuration, its cascade, and how to plan
    another (`replan` after a `session.update`; `retemplate` for the legacy protocol)."""

    config: SessionConfig
    cascade: Cascade
    replan: Replan
    retemplate: Retemplate | None = None


class SessionPlanner(Protocol):
    """Opens sessions' cascades (raises the `ApiError`s of what cannot be used)."""

    async def realtime(
        self,
        principal: Principal,
        headers: Mapping[str, str],
        model: str | None,
        intent: str | None,
    ) -> Opening: ...

    async def legacy(
        self,
        principal: Principal,
        headers: Mapping[str, str],
        template: str,
        context: str | None,
        input_format: AudioFormat,
    ) -> Opening: ...
