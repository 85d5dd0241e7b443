"""Which model-specific audio options each vendor's model honours (pure).

The issue-36 rule for chat holds for audio too: an option the chosen model cannot honour
is refused with a 400 `unsupported_parameter` naming it, never dropped in silence, and a
fallback that cannot honour it is skipped. The facts, from each vendor's API reference
(and what our adapters send):

- `diarize`, `context_bias`: Mistral's batch Voxtral only (its `/v1/audio/transcriptions`
  form). Voxtral Realtime "is not compatible with the diarize parameter" (Mistral's
  audio overview) and its 2602 session takes the audio format and the language only.
- `timestamp_granularities` with `word`: OpenAI's `whisper-1` (the only OpenAI model with
  `verbose_json`) and the offline Whisper (`local`). Voxtral answers segments only here,
  Gemini and the gpt-4o transcribe models no word times.
- `prompt`: OpenAI's models, Gemini (added to its instruction) and the offline Whisper;
  Mistral's transcription form and realtime session have no prompt.
- `temperature`: OpenAI, Gemini and batch Voxtral take it; the offline Whisper decodes
  greedily and Voxtral Realtime has no such setting.
- speech `instructions`: OpenAI's `gpt-4o-mini-tts` family only ("does not work with
  `tts-1` or `tts-1-hd`"); ElevenLabs, Google's voices and eSpeak have no such input.

A provider without a row (a test double) claims nothing and refuses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from providers.chat_support import Refusal


@attrs.frozen
class TranscriptionAsks:
    """The options of a transcription that not every model honours (unset: nothing)."""

    diarize: bool = False
    context_bias: tuple[str, ...] = ()
    words: bool = False
    prompt: str | None = None
    temperature: float | None = None


def _realtime_voxtral(model: str) -> bool:
    return model.startswith("voxtral") and "realtime" in model


def _whisper(model: str) -> bool:
    return model.startswith("whisper")


# option -> provider -> whether the provider's model (its upstream id) honours it
Honours = Mapping[str, Callable[[str], bool]]
_TRANSCRIPTION: Mapping[str, Honours] = {
    "diarize": {"mistral": lambda m: not _realtime_voxtral(m)},
    "context_bias": {"mistral": lambda m: not _realtime_voxtral(m)},
    "timestamp_granularities": {"openai": _whisper, "local": lambda _: True},
    "prompt": {
        "openai": lambda _: True,
        "google": lambda _: True,
        "local": lambda _: True,
    },
    "temperature": {
        "openai": lambda _: True,
        "google": lambda _: True,
        "mistral": lambda m: not _realtime_voxtral(m),
    },
}
_KNOWN = frozenset({"openai", "mistral", "google", "local", "elevenlabs"})

_REASONS = {
    "diarize": "only Mistral's batch Voxtral models identify speakers",
    "context_bias": "only Mistral's batch Voxtral models take context words",
    "timestamp_granularities": "only whisper-1 and the offline Whisper give word timestamps",
    "prompt": "Mistral's Voxtral models take no prompt",
    "temperature": "this model has no sampling temperature",
    "instructions": "speaking instructions reach only OpenAI's gpt-4o-mini-tts models",
}


def _asked(asks: TranscriptionAsks) -> list[tuple[str, Any]]:
    """The options `asks` sets, each with the value a refusal names."""
    found: list[tuple[str, Any]] = []
    if asks.diarize:
        found.append(("diarize", True))
    if asks.context_bias:
        found.append(("context_bias", list(asks.context_bias)))
    if asks.words:
        found.append(("timestamp_granularities", "word"))
    if asks.prompt:
        found.append(("prompt", asks.prompt))
    if asks.temperature is not None:
        found.append(("temperature", asks.temperature))
    return found


def transcription_refusal(provider_id: str, model: str, asks: TranscriptionAsks) -> Refusal | None:
    """The first option of `asks` that `provider_id`'s `model` cannot honour, or None."""
    if provider_id not in _KNOWN:
        return None
    for param, value in _asked(asks):
        honours = _TRANSCRIPTION[param].get(provider_id)
        if honours is None or not honours(model):
            return Refusal(param, value, _REASONS[param])
    return None


def speech_refusal(provider_id: str, model: str, instructions: str | None) -> Refusal | None:
    """`instructions` when `provider_id`'s `model` cannot follow them, else None."""
    if not instructions or provider_id not in _KNOWN:
        return None
    if provider_id == "openai" and not model.startswith("tts-1"):
        return None
    return Refusal("instructions", instructions, _REASONS["instructions"])
