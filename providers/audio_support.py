"""Which model-specific audio options each vendor's model honours (pure).

The issue-36 rule for chat holds for audio too: an option the chosen model cannot honour
is refused with a 400 `unsupported_parameter` naming it, never dropped in silence, and a
fallback that cannot honour it is skipped. The facts, from each vendor's API reference
(and what our adapters send):

- `diarize`: Mistral's batch Voxtral (its `/v1/audio/transcriptions` form) and OpenAI's
  `gpt-4o-transcribe-diarize` (asked for `diarized_json`). Voxtral Realtime "is not
  compatible with the diarize parameter" (Mistral's audio overview) and its 2602 session
  takes the audio format and the language only. `response_format=diarized_json` is the
  same ask in OpenAI's words: the same two models (Voxtral's speaker segments render as it).
- `context_bias` and OpenAI's `keywords[]` (words to favour): batch Voxtral
  (`context_bias`) and `gpt-transcribe` (`keywords[]`, "Supported by gpt-transcribe" in
  the SDK), each translated to the other's field. `languages[]`: `gpt-transcribe` only.
- `include[]=logprobs`: `gpt-4o-transcribe` and `gpt-4o-mini-transcribe` (and its
  snapshot), "not supported when using gpt-4o-transcribe-diarize" (SDK 3.57).
- `chunking_strategy`: the gpt-4o transcribe models (required by the diarizing one above
  30 s of audio). `known_speaker_names[]`/`known_speaker_references[]`: the diarizing one.
- `timestamp_granularities` with `word`: OpenAI's `whisper-1` (the only OpenAI model with
  `verbose_json`) and the offline Whisper (`local`). Voxtral answers segments only here,
  Gemini and the gpt-4o transcribe models no word times.
- `prompt`: OpenAI's models but the diarizing one, Gemini (added to its instruction) and
  the offline Whisper; Mistral's transcription form and realtime session have no prompt.
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
    diarized_json: bool = False
    keywords: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    logprobs: bool = False
    chunking: bool = False
    known_speakers: tuple[str, ...] = ()


def _realtime_voxtral(model: str) -> bool:
    return model.startswith("voxtral") and "realtime" in model


def _batch_voxtral(model: str) -> bool:
    return not _realtime_voxtral(model)


def _whisper(model: str) -> bool:
    return model.startswith("whisper")


def diarizing(model: str) -> bool:
    """OpenAI's model that tells speakers apart (`gpt-4o-transcribe-diarize`)."""
    return model.startswith("gpt-4o-transcribe-diarize")


def _gpt_transcribe(model: str) -> bool:
    return model.startswith("gpt-transcribe")


def _gpt_4o_transcribe(model: str) -> bool:
    return model.startswith(("gpt-4o-transcribe", "gpt-4o-mini-transcribe"))


def _with_logprobs(model: str) -> bool:
    return _gpt_4o_transcribe(model) and not diarizing(model)


# option -> provider -> whether the provider's model (its upstream id) honours it
Honours = Mapping[str, Callable[[str], bool]]
_TRANSCRIPTION: Mapping[str, Honours] = {
    "diarize": {"mistral": _batch_voxtral, "openai": diarizing},
    "response_format": {"mistral": _batch_voxtral, "openai": diarizing},
    "context_bias": {"mistral": _batch_voxtral, "openai": _gpt_transcribe},
    "keywords": {"mistral": _batch_voxtral, "openai": _gpt_transcribe},
    "languages": {"openai": _gpt_transcribe},
    "include": {"openai": _with_logprobs},
    "chunking_strategy": {"openai": _gpt_4o_transcribe},
    "known_speaker_names": {"openai": diarizing},
    "timestamp_granularities": {"openai": _whisper, "local": lambda _: True},
    "prompt": {
        "openai": lambda m: not diarizing(m),
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
    "diarize": "only Mistral's batch Voxtral and gpt-4o-transcribe-diarize identify speakers",
    "response_format": "only Mistral's batch Voxtral and gpt-4o-transcribe-diarize answer "
    "diarized_json",
    "context_bias": "only Mistral's batch Voxtral and gpt-transcribe take words to favour",
    "keywords": "only gpt-transcribe and Mistral's batch Voxtral take words to favour",
    "languages": "only gpt-transcribe takes a list of possible languages",
    "include": "logprobs come only from gpt-4o-transcribe and gpt-4o-mini-transcribe",
    "chunking_strategy": "only the gpt-4o transcribe models take a chunking strategy",
    "known_speaker_names": "only gpt-4o-transcribe-diarize takes known speakers",
    "timestamp_granularities": "only whisper-1 and the offline Whisper give word timestamps",
    "prompt": "Mistral's Voxtral models and gpt-4o-transcribe-diarize take no prompt",
    "temperature": "this model has no sampling temperature",
    "instructions": "speaking instructions reach only OpenAI's gpt-4o-mini-tts models",
}


def _asked(asks: TranscriptionAsks) -> list[tuple[str, Any]]:
    """The options `asks` sets, each with the value a refusal names."""
    found: list[tuple[str, Any]] = []
    if asks.diarize:
        found.append(("diarize", True))
    if asks.diarized_json:
        found.append(("response_format", "diarized_json"))
    if asks.context_bias:
        found.append(("context_bias", list(asks.context_bias)))
    found += _newer_asks(asks)
    if asks.words:
        found.append(("timestamp_granularities", "word"))
    if asks.prompt:
        found.append(("prompt", asks.prompt))
    if asks.temperature is not None:
        found.append(("temperature", asks.temperature))
    return found


def _newer_asks(asks: TranscriptionAsks) -> list[tuple[str, Any]]:
    """OpenAI's newer options that `asks` sets, each with the value a refusal names."""
    found: list[tuple[str, Any]] = []
    if asks.keywords:
        found.append(("keywords", list(asks.keywords)))
    if asks.languages:
        found.append(("languages", list(asks.languages)))
    if asks.logprobs:
        found.append(("include", ["logprobs"]))
    if asks.chunking:
        found.append(("chunking_strategy", None))
    if asks.known_speakers:
        found.append(("known_speaker_names", list(asks.known_speakers)))
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
