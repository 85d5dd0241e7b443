"""What a pipeline's stages used, and the endpoint their usage records name."""

from __future__ import annotations

from typing import Any

import attrs

from gateway.upstream.resolve import Target

ENDPOINT = "audio.pipelines"  # every stage's usage record, whatever its family


@attrs.define
class Metered:
    """What the stages used so far (the result's `usage`)."""

    stt_seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tts_characters: int = 0
    llm_target: Target | None = None

    def body(self) -> dict[str, Any]:
        return {
            "stt_seconds": round(self.stt_seconds, 3),
            "llm_tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "tts_characters": self.tts_characters,
        }
