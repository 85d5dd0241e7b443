"""OpenAI's Responses-only models (`o3-pro`, `gpt-5.5-pro`...) through the official
`openai` client: served on `/v1/responses` by OpenAI's own `/v1/responses` (the
simulator refuses them on chat completions, as OpenAI does, so an answer proves the
wire), refused on `/v1/chat/completions` and `/v1/messages` as OpenAI refuses them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog
from providers.sim.core import Fault
from tests.gateway.test_responses_api import WEATHER, extra

OPENAI_REFUSAL = "This model is only supported in v1/responses and not in v1/chat/completions."


def list_price(model: str, input_tokens: int, output_tokens: int) -> float:
    info = load_catalog().model(model)
    assert info is not None
    return info.cost(input_tokens, output_tokens).total


@pytest.mark.parametrize("model", ["o3-pro", "gpt-5.5-pro", "o3-pro-2025-06-10"])
async def test_a_plain_response(client: openai.AsyncOpenAI, model: str) -> None:
    response = await client.responses.create(model=model, input="Hello there")
    assert response.status == "completed" and response.output_text
    assert [item.type for item in response.output] == ["message"]
    usage = response.usage
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
    service = extra(response)["service"]
    assert service["provider"] == "openai"
    # priced at the model's own list price (o3-pro: $20 / $80 per 1M tokens)
    priced = list_price(model, usage.input_tokens, usage.output_tokens)
    assert service["cost"]["total"] == priced > 0
    assert extra(response)["_gateway"]["carbon"]["carbon_gco2e"] > 0


@pytest.mark.parametrize("model", ["o3-pro", "gpt-5.5-pro"])
async def test_a_streamed_response(client: openai.AsyncOpenAI, model: str) -> None:
    """gpt-5.5-pro streams from OpenAI; o3-pro does not (OpenAI streams none of the o-pro
    models), so its whole answer is asked and streamed to the client as it arrives."""
    stream = await client.responses.create(model=model, input="Tell me a story", stream=True)
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # type: ignore[union-attr]
    assert deltas and deltas == final.output_text
    assert final.usage is not None and final.usage.output_tokens > 0
    usage = final.usage
    priced = list_price(model, usage.input_tokens, usage.output_tokens)
    assert extra(final)["service"]["cost"]["total"] == priced


@pytest.mark.parametrize(("model", "stream"), [("o3-pro", False), ("gpt-5.5-pro", True)])
async def test_a_function_tool_round_trip(
    client: openai.AsyncOpenAI, model: str, stream: bool
) -> None:
    asked: dict[str, Any] = {
        "model": model,
        "input": "What is the weather in Paris?",
        "tools": [WEATHER],
        "tool_choice": {"type": "function", "name": "get_weather"},
    }
    if stream:
        events = [e async for e in await client.responses.create(**asked, stream=True)]
        first = events[-1].response
        kinds = [event.type for event in events]
        assert "response.function_call_arguments.delta" in kinds
    else:
        first = await client.responses.create(**asked)
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather" and calls[0].call_id
    assert isinstance(json.loads(calls[0].arguments), dict)
    second = await client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "Sunny, 21 C"}
        ],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.status == "completed" and second.output_text
    assert [item.type for item in second.output] == ["message"]


@pytest.mark.parametrize("model", ["o3-pro", "openai/gpt-5.5-pro", "o3-pro-2025-06-10"])
async def test_chat_completions_refuses_it_as_openai_does(
    client: openai.AsyncOpenAI, model: str
) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hi"}]
        )
    error = caught.value.body
    assert isinstance(error, dict)
    assert caught.value.status_code == 404
    assert error["message"] == OPENAI_REFUSAL
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "model_endpoint_not_supported"
    assert error["param"] == "model" and error["model"] == model
    assert error["endpoints"] == ["responses"]


async def test_the_messages_door_refuses_it_in_anthropics_shape(
    http: httpx.AsyncClient,
) -> None:
    answer = await http.post(
        "/v1/messages",
        json={"model": "o3-pro", "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert answer.status_code == 404
    body = answer.json()
    assert body["type"] == "error"
    assert body["error"]["message"] == (
        "This model is only supported in v1/responses and not in v1/messages."
    )


async def test_counting_tokens_for_it_on_the_messages_door_is_refused_too(
    http: httpx.AsyncClient,
) -> None:
    """`count_tokens` answers for the models `create` serves: a count for a model the door
    refuses would tell the client a request is fine that then fails."""
    answer = await http.post(
        "/v1/messages/count_tokens",
        json={"model": "o3-pro", "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == (
        "This model is only supported in v1/responses and not in v1/messages."
    )
    counted = await http.post(
        "/v1/messages/count_tokens",
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0


async def test_a_model_openai_shut_down_says_when(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.responses.create(model="gpt-5-codex", input="Hi")
    assert caught.value.code == "model_not_found"
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == (
        "The model 'gpt-5-codex' was retired by its provider on 2026-07-23; use 'gpt-5.4' instead."
    )


async def test_a_failing_openai_falls_back_to_a_chat_wire_model(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="o3-pro", status=500))
    response = await client.responses.create(model="o3-pro", input="Hello")
    assert response.status == "completed" and response.output_text
    fallback = extra(response)["_gateway"]["fallback"]
    assert fallback["fallback_attempted"] is True
    assert [a["outcome"] for a in fallback["attempts"]] == ["failed", "won"]
    assert response.model == "claude-opus-5-5"  # o3-pro's catalog chain
