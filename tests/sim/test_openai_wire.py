"""The OpenAI simulator's fast encoders agree with the plain JSON they stand for."""

from __future__ import annotations

import json

from providers.sim import openai as sim_openai
from providers.sim.server import SimConfig, SimServer

TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def plan(model: str, text: str, **body: object) -> sim_openai.ChatPlan:
    args = sim_openai.chat_args(
        {"model": model, "messages": [{"role": "user", "content": text}], **body}
    )
    return sim_openai.plan_chat(args, SimServer("127.0.0.1", 1, SimConfig()))


def test_encoded_completion_matches_its_json() -> None:
    for answer in (plan('odd "model" é', 'hé "quoted" \n'), plan("m", "x", tools=[TOOL])):
        encoded = sim_openai.encode_completion(answer)
        assert json.loads(encoded) == sim_openai.completion_json(answer)


def test_content_chunk_matches_the_generic_delta() -> None:
    for include_usage in (False, True):
        answer = plan("m", "x", stream=True, stream_options={"include_usage": include_usage})
        encoder = sim_openai.ChunkEncoder(answer)
        for text in ("", "plain", 'quote " and é and \n'):
            assert encoder.content(text) == encoder.delta({"content": text})
        event = json.loads(encoder.content("t").removeprefix(b"data: "))
        assert ("usage" in event) is include_usage
