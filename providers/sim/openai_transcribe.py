"""What OpenAI's transcription form takes per model, and the answers only some models
give, for the simulator: the rules of the `openai` package's (3.57)
`transcription_create_params.py`, refused with a 400 naming the field as OpenAI does.

- `gpt-4o-transcribe-diarize`: `response_format` `json`, `text` or `diarized_json` (no
  `verbose_json`, `srt`, `vtt`); no `prompt`, `include` or `timestamp_granularities`;
  `chunking_strategy` required above 30 s of audio; up to 4 known speakers, one data URL
  of audio each. Its `diarized_json` splits the text in two turns, labelled `A` and `B`
  (or by the first known speaker names), streamed as `transcript.text.segment` events.
- `include[]=logprobs`: `gpt-4o-transcribe` and `gpt-4o-mini-transcribe` with `json`;
  each word of the text comes back with a log probability.
- `keywords[]` and `languages[]`: `gpt-transcribe` only; its text then names the words it
  was given ("Keywords: a, b."), so a test sees that they arrived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from providers.sim.openai import OpenAIError

DIARIZING = "gpt-4o-transcribe-diarize"
DIARIZED_FORMATS = ("json", "text", "diarized_json")
UNCHUNKED_LIMIT_S = 30.0
MAX_KNOWN_SPEAKERS = 4

Form = Mapping[str, Sequence[str]]


def last(fields: Form, name: str, default: str = "") -> str:
    return (fields.get(name) or [default])[-1]


def check_form(fields: Form, model: str, seconds: float) -> None:
    """A 400 for what `model` does not take in its form, as OpenAI answers."""
    fmt = last(fields, "response_format", "json")
    if model == DIARIZING:
        _check_diarizing(fields, fmt, seconds)
    elif fmt == "diarized_json":
        raise OpenAIError(
            400,
            f"response_format 'diarized_json' is not compatible with model '{model}'.",
            param="response_format",
        )
    logprobs_model = model.startswith(("gpt-4o-transcribe", "gpt-4o-mini-transcribe"))
    if fields.get("include[]") and (not logprobs_model or fmt != "json"):
        raise OpenAIError(400, "logprobs need gpt-4o(-mini)-transcribe and json.", param="include")
    for name in ("keywords[]", "languages[]"):
        if fields.get(name) and not model.startswith("gpt-transcribe"):
            raise OpenAIError(
                400, f"'{name[:-2]}' is supported by gpt-transcribe only.", param=name[:-2]
            )


def _check_diarizing(fields: Form, fmt: str, seconds: float) -> None:
    if fmt not in DIARIZED_FORMATS:
        raise OpenAIError(
            400,
            f"response_format '{fmt}' is not compatible with model '{DIARIZING}'.",
            param="response_format",
        )
    for name in ("prompt", "include[]", "timestamp_granularities[]"):
        if fields.get(name):
            param = name.removesuffix("[]")
            raise OpenAIError(400, f"'{param}' is not supported with {DIARIZING}.", param=param)
    chunked = any(name.startswith("chunking_strategy") for name in fields)
    if seconds > UNCHUNKED_LIMIT_S and not chunked:
        raise OpenAIError(
            400,
            "chunking_strategy is required for diarization models when the input audio is "
            f"longer than {UNCHUNKED_LIMIT_S:g} seconds.",
            param="chunking_strategy",
        )
    names = fields.get("known_speaker_names[]", [])
    references = fields.get("known_speaker_references[]", [])
    if len(names) != len(references) or len(names) > MAX_KNOWN_SPEAKERS:
        raise OpenAIError(400, "Invalid known speakers.", param="known_speaker_names")
    if any(not ref.startswith("data:audio/") for ref in references):
        raise OpenAIError(400, "Invalid data URL.", param="known_speaker_references")


def heard_text(fields: Form, text: str) -> str:
    """The text, naming the keywords gpt-transcribe was given."""
    keywords = fields.get("keywords[]")
    return f"{text} Keywords: {', '.join(keywords)}." if keywords else text


def speakers(fields: Form) -> tuple[str, str]:
    names = fields.get("known_speaker_names[]") or []
    return (names[0] if names else "A", names[1] if len(names) > 1 else "B")


def diarized_segments(fields: Form, text: str, seconds: float) -> list[dict[str, Any]]:
    """The text in two turns (one when it is a single word), by speaker."""
    words = text.split()
    half = max(1, len(words) // 2)
    turns = [" ".join(words[:half]), " ".join(words[half:])]
    labels = speakers(fields)
    middle = round(seconds / 2, 3)
    bounds = [(0.0, middle), (middle, round(seconds, 3))]
    return [
        {
            "type": "transcript.text.segment",
            "id": f"seg_{index:03d}",
            "start": bounds[index][0],
            "end": bounds[index][1],
            "speaker": labels[index],
            "text": turn,
        }
        for index, turn in enumerate(turns)
        if turn
    ]


def logprobs(text: str) -> list[dict[str, Any]]:
    """One entry a word, with a log probability that falls a little with each."""
    return [
        {
            "token": word if i == 0 else " " + word,
            "logprob": round(-0.01 * (i + 1), 4),
            "bytes": list((word if i == 0 else " " + word).encode()),
        }
        for i, word in enumerate(text.split())
    ]
