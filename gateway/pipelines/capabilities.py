"""What the pipelines family uses from the audio and chat families, plugged in by the
composition root: the three stages of a template planned and opened through them
(recognition, the language model, speech), a clip measured, a workspace's voice mapping.
The pipeline itself (`gateway.kernels.voice.flow`) only sees `PreparedStages`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import attrs

from gateway.kernels.voice.flow import Opened, Stages
from gateway.pipelines.metered import Metered
from gateway.pipelines.templates import Template
from gateway.platform.auth import Principal
from gateway.upstream.resolve import Target
from providers.audio_types import AudioClip, TranscriptEvent
from providers.types import ToolCallDelta
from streams.tape import Tape


class PreparedStages(Stages, Protocol):
    """A template's stages, planned (nothing called yet), and what they have used."""

    metered: Metered

    @property
    def prompt_estimate(self) -> int:
        """The model's prompt, estimated (what admission reserves)."""
        ...

    @property
    def planned_llm_target(self) -> Target:
        """The model the plan put first (what the limits are settled on when it never ran)."""
        ...

    def with_clip(self, clip: AudioClip, history: Sequence[Mapping[str, str]]) -> PreparedStages:
        """The same plans for another turn of a conversation."""
        ...

    def converse(
        self, body: dict[str, Any], on_tool_call: Callable[[ToolCallDelta], None] | None = None
    ) -> AbstractAsyncContextManager[Opened[str]]:
        """The model on a whole conversation `body` (its tool calls to `on_tool_call`)."""
        ...

    def transcribe_live(self, tape: Tape) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]:
        """Recognition of the turn being recorded on `tape`, while it is spoken."""
        ...


class PrepareStages(Protocol):
    async def __call__(
        self,
        principal: Principal,
        headers: Mapping[str, str],
        template: Template,
        clip: AudioClip,
        *,
        history: Sequence[Mapping[str, str]] = (),
        response_format: Mapping[str, Any] | None = None,
        endpoint: str = ...,
    ) -> PreparedStages:
        """Plan every stage of `template` (4xx `ApiError` for what cannot be used)."""
        ...


@attrs.frozen
class VoiceParts:
    prepare_stages: PrepareStages
    # A clip's bytes measured (blocking: in a thread); 400 when they are not audio.
    measure_clip: Callable[[bytes, str], AudioClip]
    # (workspace, voice name) -> the workspace's mapping of that name, or None.
    voice_mapping: Callable[[str, str], Awaitable[object | None]]
