"""Spoken chat of the simulated OpenAI API: `modalities: ["text", "audio"]` with `audio:
{voice, format}` answers in speech, and `input_audio` parts are heard, on the audio
models only (the catalog's OpenAI models with the `audio` capability).

A spoken answer is the text the simulator would have written, spoken by the local speech
engine and encoded with the real encoder in the format asked (`pcm16`: raw 24 kHz s16le),
in `message.audio` (`id`, base64 `data`, `expires_at`, `transcript`; `content` is null).
Streamed, the choice's `delta.audio` carries the `id` first, then the transcript as the
tokens come, then the data in pieces, then `expires_at`. The usage counts audio apart
(`*_tokens_details.audio_tokens`) at the simulator's realtime rates.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import time
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, cast

import attrs

from providers.audio_types import SpeechFormat
from providers.sim import content
from providers.sim.catalog_models import vendor_models
from providers.sim.core import Fault, SimContext
from providers.sim.openai.common import VENDOR, OpenAIError
from providers.sim.openai_realtime_answer import AUDIO_IN_TOKENS_PER_S, AUDIO_OUT_TOKENS_PER_S

if TYPE_CHECKING:
    from providers.sim.openai.chat import ChunkEncoder

FORMATS: Mapping[str, SpeechFormat] = {
    "wav": "wav",
    "aac": "aac",
    "mp3": "mp3",
    "flac": "flac",
    "opus": "opus",
    "pcm16": "pcm",
}
"""The chat API's audio formats, as the speech engine's (`pcm16` is its raw `pcm`)."""
INPUT_FORMATS = ("wav", "mp3")
PCM16_RATE = 24_000
KEPT_S = 3600
"""How long the simulated vendor keeps a spoken answer for the next turn (`expires_at`):
the simulator's own choice."""
DATA_PIECE = 9600
"""Audio bytes per streamed `delta.audio.data` (200 ms of pcm16)."""


@attrs.frozen(slots=True)
class Speaking:
    """How the request asks the answer to be spoken."""

    voice: str | Mapping[str, Any]
    format: str


@attrs.frozen(slots=True)
class Spoken:
    """One choice's spoken answer."""

    id: str
    data: bytes
    transcript: str
    expires_at: int
    tokens: int  # audio tokens of the speech

    def audio_json(self) -> dict[str, Any]:
        data = base64.b64encode(self.data).decode("ascii")
        return {
            "id": self.id,
            "data": data,
            "expires_at": self.expires_at,
            "transcript": self.transcript,
        }


def audio_models() -> frozenset[str]:
    """The OpenAI models that hear and speak in chat (by the catalog)."""
    return frozenset(m.upstream_id for m in vendor_models(VENDOR) if m.has("audio"))


def speaking(body: Mapping[str, Any], model: str) -> Speaking | None:
    """What `modalities` and `audio` ask (None: a text answer), checked as OpenAI does."""
    modalities = body.get("modalities")
    if not isinstance(modalities, list) or "audio" not in modalities:
        return None
    if model not in audio_models():
        raise OpenAIError(
            400,
            f"This model does not support audio output: `{model}`. Use an audio model.",
            param="modalities",
            code="unsupported_value",
        )
    audio = body.get("audio")
    voice = audio.get("voice") if isinstance(audio, dict) else None
    if not isinstance(audio, dict) or audio.get("format") not in FORMATS or not voice:
        raise OpenAIError(
            400,
            "Missing required parameter: 'audio' (with 'voice' and 'format' one of "
            f"{', '.join(FORMATS)}) when 'modalities' includes 'audio'.",
            param="audio",
            code="missing_required_parameter",
        )
    return Speaking(voice, str(audio["format"]))


def heard_clips(messages: Sequence[Mapping[str, Any]], model: str) -> list[bytes]:
    """The audio of the `input_audio` parts, decoded from base64 (400 when a part is not
    base64 of a known format, or the model hears no audio)."""
    clips = []
    for part in _audio_parts(messages):
        audio = part.get("input_audio")
        audio = audio if isinstance(audio, dict) else {}
        if audio.get("format") not in INPUT_FORMATS:
            raise OpenAIError(
                400, "Invalid 'input_audio.format': expected wav or mp3.", param="messages"
            )
        try:
            clips.append(base64.b64decode(str(audio.get("data") or ""), validate=True))
        except binascii.Error:
            raise OpenAIError(
                400, "Invalid 'input_audio.data': expected base64.", param="messages"
            ) from None
    if clips and model not in audio_models():
        raise OpenAIError(
            400, f"This model does not support audio input: `{model}`.", param="messages"
        )
    return clips


def _audio_parts(messages: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for message in messages:
        parts = message.get("content")
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and part.get("type") == "input_audio":
                yield part


async def heard_tokens(clips: Sequence[bytes], ctx: SimContext) -> int:
    """The audio tokens of the clips heard; 400 when one is not audio."""
    seconds = 0.0
    for clip in clips:
        measured = await ctx.audio().measured_seconds(clip)
        if measured is None:
            raise OpenAIError(
                400, "The audio file could not be decoded or its format is not supported.",
                param="messages",
            )  # fmt: skip
        seconds += measured
    return math.ceil(seconds * AUDIO_IN_TOKENS_PER_S)


@attrs.frozen(slots=True)
class Voice:
    """What one request heard and said: the spoken answers by choice index and the
    audio tokens of the input heard."""

    spoken: Mapping[int, Spoken]
    heard: int

    @classmethod
    async def of(
        cls, plan: content.ChatPlan, asked: Speaking | None, clips: Sequence[bytes], ctx: SimContext
    ) -> Voice:
        heard = await heard_tokens(clips, ctx) if clips else 0
        spoken = await speak(plan.choices, asked, ctx) if asked is not None else {}
        return cls(spoken, heard)

    def completion(self, completion: dict[str, Any]) -> dict[str, Any]:
        """A `chat.completion` object with its spoken answers and their usage."""
        for choice in completion["choices"]:
            answer = self.spoken.get(choice["index"])
            if answer is not None:
                choice["message"]["content"] = None
                choice["message"]["audio"] = answer.audio_json()
        completion["usage"] = self.usage(completion["usage"])
        return completion

    def usage(self, usage: dict[str, Any]) -> dict[str, Any]:
        """`usage` with the audio tokens heard and spoken (counted in the totals too)."""
        said = sum(answer.tokens for answer in self.spoken.values())
        prompt = usage["prompt_tokens"] + self.heard
        completion = usage["completion_tokens"] + said
        prompt_details = cast(dict[str, Any], usage["prompt_tokens_details"])
        completion_details = cast(dict[str, Any], usage["completion_tokens_details"])
        return usage | {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": prompt_details | {"audio_tokens": self.heard},
            "completion_tokens_details": completion_details | {"audio_tokens": said},
        }


async def speak(
    choices: Sequence[content.ChoicePlan], asked: Speaking, ctx: SimContext
) -> dict[int, Spoken]:
    """Each text choice's answer spoken (a tool call is not spoken), by choice index."""
    spoken = {}
    for choice in choices:
        if choice.tool_call is None:
            transcript = "".join(choice.tokens)
            data, seconds = await ctx.audio().synthesise_timed(
                transcript, FORMATS[asked.format], PCM16_RATE
            )
            spoken[choice.index] = Spoken(
                id="audio_" + os.urandom(12).hex(),
                data=data,
                transcript=transcript,
                expires_at=int(time.time()) + KEPT_S,
                tokens=math.ceil(seconds * AUDIO_OUT_TOKENS_PER_S),
            )
    return spoken


async def spoken_events(
    encoder: ChunkEncoder,
    choice: content.ChoicePlan,
    answer: Spoken,
    ctx: SimContext,
    fault: Fault | None,
) -> AsyncGenerator[bytes]:
    """One spoken choice streamed: the audio's id with the role, the transcript as its
    tokens come (paced, as text would be), the data in pieces, its expiry, the finish."""
    index = choice.index
    opening = {"role": "assistant", "content": None, "refusal": None}
    yield encoder.delta(opening | {"audio": {"id": answer.id}}, index=index)
    async with aclosing(ctx.pace(choice.tokens, fault)) as groups:
        async for group in groups:
            yield encoder.delta({"audio": {"transcript": "".join(group)}}, index=index)
    for start in range(0, len(answer.data), DATA_PIECE):
        piece = base64.b64encode(answer.data[start : start + DATA_PIECE]).decode("ascii")
        yield encoder.delta({"audio": {"data": piece}}, index=index)
    yield encoder.delta({"audio": {"expires_at": answer.expires_at}}, index=index)
    yield encoder.delta({}, choice.finish_reason, index=index)
