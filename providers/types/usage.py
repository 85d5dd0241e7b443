"""What a request consumed, in the units each kind of model is billed in.

Chat and embeddings are billed in tokens; speech synthesis in characters; transcription in
seconds of audio (priced per minute); OCR in pages; rerank in search units; stored
files in bytes. One `Usage`
carries every unit, so the accounting, the limiter and the usage log have one code path
whatever the endpoint family: a unit a request does not use is zero.
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class Usage:
    """Quantities as the upstream reported them (or as we estimated them)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    audio_seconds: float = 0.0
    characters: int = 0
    pages: int = 0
    searches: int = 0
    bytes_stored: int = 0
    # Of `prompt_tokens` / `completion_tokens`, how many were audio (a realtime model's
    # speech in and out), which its vendor prices apart from text (`Pricing.audio_*`).
    audio_prompt_tokens: int = 0
    audio_completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.audio_seconds + other.audio_seconds,
            self.characters + other.characters,
            self.pages + other.pages,
            self.searches + other.searches,
            self.bytes_stored + other.bytes_stored,
            self.audio_prompt_tokens + other.audio_prompt_tokens,
            self.audio_completion_tokens + other.audio_completion_tokens,
        )
