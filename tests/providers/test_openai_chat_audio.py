"""The OpenAI adapter reads a spoken answer's pieces (pure): `message.audio` whole,
`delta.audio` streamed (never taken for a plain text delta, even with `content: ""`
beside it), and the audio tokens of the usage apart."""

from __future__ import annotations

from providers.openai import parse_chat, parse_chunks, plain_text
from providers.types import ChatChunk

AUDIO = {"id": "audio_1", "data": "AAAA", "expires_at": 1, "transcript": "Hi."}
USAGE = {
    "prompt_tokens": 30,
    "completion_tokens": 50,
    "prompt_tokens_details": {"audio_tokens": 20, "cached_tokens": 0},
    "completion_tokens_details": {"audio_tokens": 45},
}


def chunk(delta: dict[str, object]) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}]}


def test_a_streamed_audio_piece_is_no_plain_text_and_is_relayed() -> None:
    event = chunk({"role": "assistant", "content": "", "audio": {"id": "audio_1"}})
    assert plain_text(event) is None
    assert parse_chunks(event) == [ChatChunk(audio={"id": "audio_1"})]
    assert parse_chunks(chunk({"audio": {"data": "AAAA"}})) == [ChatChunk(audio={"data": "AAAA"})]


def test_a_whole_spoken_answer_and_its_audio_tokens() -> None:
    message = {"role": "assistant", "content": None, "audio": AUDIO}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    result = parse_chat({"id": "c", "model": "gpt-audio", "choices": [choice], "usage": USAGE})
    assert result.audio == AUDIO and result.choices[0].audio == AUDIO and result.content is None
    usage = result.usage
    assert (usage.prompt_tokens, usage.audio_prompt_tokens) == (30, 20)
    assert (usage.completion_tokens, usage.audio_completion_tokens) == (50, 45)
