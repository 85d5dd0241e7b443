"""The OpenAI simulator's `POST /v1/responses` through the official `openai` client."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from providers.sim.core import Fault
from providers.sim.server import SimServer

MODEL = "gpt-4o-mini"
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


async def test_a_response_is_the_chat_answer_to_the_same_conversation(
    openai_client: openai.AsyncOpenAI,
) -> None:
    response = await openai_client.responses.create(
        model=MODEL, instructions="Be brief.", input="Hello there"
    )
    chat = await openai_client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "Hello there"},
        ],
    )
    assert response.status == "completed" and response.object == "response"
    assert response.output_text == chat.choices[0].message.content
    assert response.usage is not None and chat.usage is not None
    assert response.usage.input_tokens == chat.usage.prompt_tokens


async def test_the_stream_is_the_documented_sequence(openai_client: openai.AsyncOpenAI) -> None:
    whole = await openai_client.responses.create(model=MODEL, input="Tell me about rivers")
    async with openai_client.responses.stream(model=MODEL, input="Tell me about rivers") as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert final.output_text == whole.output_text


@pytest.mark.parametrize("stream", [False, True])
async def test_a_function_call_and_its_output(
    openai_client: openai.AsyncOpenAI, stream: bool
) -> None:
    if stream:
        async with openai_client.responses.stream(
            model=MODEL, input="Weather in Paris?", tools=[WEATHER]
        ) as events:
            first = await events.get_final_response()
    else:
        first = await openai_client.responses.create(
            model=MODEL, input="Weather in Paris?", tools=[WEATHER]
        )
    [call] = first.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert isinstance(json.loads(call.arguments), dict)
    second = await openai_client.responses.create(
        model=MODEL,
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny"},
        ],
        tools=[WEATHER],
    )
    assert second.output_text


async def test_faults_apply(sim: SimServer, openai_client: openai.AsyncOpenAI) -> None:
    sim.faults.add(Fault(model=MODEL, status=503))
    with pytest.raises(openai.InternalServerError):
        await openai_client.responses.create(model=MODEL, input="Hi")


@pytest.mark.parametrize("model", ["o3-pro", "gpt-5.5-pro-2026-04-23", "o1-pro"])
async def test_a_responses_only_model_is_answered_here_and_refused_on_chat(
    openai_client: openai.AsyncOpenAI, model: str
) -> None:
    """As OpenAI does: the model answers on /v1/responses; /v1/chat/completions is a 404
    `invalid_request_error` naming `model`, with no code."""
    response = await openai_client.responses.create(model=model, input="Hello there")
    assert response.status == "completed" and response.output_text
    with pytest.raises(openai.NotFoundError) as caught:
        await openai_client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hello there"}]
        )
    assert caught.value.body == {
        "message": "This model is only supported in v1/responses and not in v1/chat/completions.",
        "type": "invalid_request_error",
        "param": "model",
        "code": None,
    }
