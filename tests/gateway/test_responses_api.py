"""`POST /v1/responses` through the official `openai` client, served by every chat vendor.

The client sees OpenAI's Responses API; behind it, chat's path (routing, fallbacks,
limits, cache, usage) and the simulators of each vendor.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.test_chat_api import upstream

CHAT_MODELS = ["gpt-4o-mini", "claude-haiku-4-5", "gemini-2.5-flash", "mistral-small-latest"]
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


def extra(answer: Any) -> dict[str, Any]:
    return dict(answer.model_extra or {})


@pytest.mark.parametrize("model", CHAT_MODELS)
async def test_a_plain_response_from_every_vendor(client: openai.AsyncOpenAI, model: str) -> None:
    raw = await client.responses.with_raw_response.create(model=model, input="Hello there")
    response = raw.parse()
    assert response.status == "completed"
    assert response.output_text
    assert [item.type for item in response.output] == ["message"]
    assert response.model == model
    usage = response.usage
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    # one id everywhere: the response's, the X-Request-ID, the usage record's
    assert response.id == "resp_" + raw.headers["x-request-id"].replace("-", "")
    service = extra(response)["service"]
    assert service["provider"] == model_provider(model)
    assert service["cost"]["total"] > 0
    assert extra(response)["_gateway"]["carbon"]["carbon_gco2e"] > 0


def model_provider(model: str) -> str:
    return {"gpt": "openai", "cla": "anthropic", "gem": "google", "mis": "mistral"}[model[:3]]


async def test_instructions_and_sampling_are_repeated(client: openai.AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="gpt-4o-mini",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
        instructions="Answer briefly.",
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=5,
        metadata={"team": "search"},
    )
    assert response.instructions == "Answer briefly."
    assert (response.temperature, response.top_p, response.max_output_tokens) == (0.2, 0.9, 5)
    assert response.metadata == {"team": "search"}
    # five tokens is not the whole answer: incomplete, as the API says it
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage is not None and response.usage.output_tokens == 5


async def test_the_stream_is_the_documented_sequence(client: openai.AsyncOpenAI) -> None:
    plain = await client.responses.create(model="gpt-4o-mini", input="Tell me about rivers")
    stream = await client.responses.create(
        model="gpt-4o-mini", input="Tell me about rivers", stream=True
    )
    events = [event async for event in stream]
    kinds = [event.type for event in events]
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
    assert set(kinds[4:-4]) == {"response.output_text.delta"}
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # type: ignore[union-attr]
    assert deltas == final.output_text == plain.output_text
    assert events[0].response.status == "in_progress"  # type: ignore[union-attr]
    assert final.usage is not None and final.usage.output_tokens > 0
    stored = await client.responses.retrieve(final.id)
    assert stored.output_text == final.output_text and stored.status == "completed"


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-haiku-4-5"])
async def test_a_function_tool_round_trip(client: openai.AsyncOpenAI, model: str) -> None:
    first = await client.responses.create(
        model=model,
        input="What is the weather in Paris?",
        tools=[WEATHER],  # type: ignore[list-item]
    )
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert isinstance(json.loads(calls[0].arguments), dict)
    assert calls[0].call_id
    second = await client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "Sunny, 21 C"}
        ],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.output_text and second.status == "completed"
    assert [item.type for item in second.output] == ["message"]


ODD_TEXT = (
    'She said "data: [DONE]" \\ then\n\ndata: {"x": []} \u00e9t\u00e9 \U0001f600'
    " \u2028 </script> 100%d %b %% done."
)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-haiku-4-5"])
async def test_odd_text_streams_whole_through_the_clients_accumulator(
    client: openai.AsyncOpenAI, gateway: RunningGateway, model: str
) -> None:
    """The events are spliced from prepared bytes (`gateway.responses.frames`): the
    client's own accumulator parses every one and rebuilds the text exactly."""
    assert gateway.sim is not None
    gateway.sim.replies.append(ODD_TEXT)
    async with client.responses.stream(model=model, input="Say it") as stream:
        deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(deltas) == final.output_text == ODD_TEXT
    assert final.status == "completed" and final.usage is not None


async def test_a_streamed_function_call(client: openai.AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="gpt-4o-mini",
        input="What is the weather in Paris?",
        tools=[WEATHER],  # type: ignore[list-item]
        tool_choice={"type": "function", "name": "get_weather"},
        stream=True,
    )
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[2] == "response.output_item.added"
    assert events[2].item.type == "function_call"  # type: ignore[union-attr]
    assert "response.function_call_arguments.delta" in kinds
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert done.arguments == deltas and json.loads(deltas)  # type: ignore[union-attr]
    final = events[-1].response  # type: ignore[union-attr]
    assert [item.type for item in final.output] == ["function_call"]
    assert final.output[0].arguments == deltas


async def test_json_schema_output(client: openai.AsyncOpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
        "additionalProperties": False,
    }
    response = await client.responses.create(
        model="gpt-4o-mini",
        input="Name a large city.",
        text={"format": {"type": "json_schema", "name": "city", "schema": schema, "strict": True}},
    )
    answer = json.loads(response.output_text)
    assert set(answer) == {"city", "population"} and isinstance(answer["population"], int)
    assert response.text is not None and response.text.format.type == "json_schema"


async def test_previous_response_id_continues_the_conversation(client: openai.AsyncOpenAI) -> None:
    first = await client.responses.create(model="gpt-4o-mini", input="My name is Ada.")
    second = await client.responses.create(
        model="gpt-4o-mini", input="What is my name?", previous_response_id=first.id
    )
    assert second.previous_response_id == first.id
    alone = await client.responses.create(model="gpt-4o-mini", input="What is my name?")
    assert first.usage is not None and second.usage is not None and alone.usage is not None
    # the upstream read the first turn (question and answer) before the second
    carried = first.usage.input_tokens + first.usage.output_tokens
    assert second.usage.input_tokens >= alone.usage.input_tokens + carried - 2
    third = await client.responses.create(
        model="claude-haiku-4-5", input="And again?", previous_response_id=second.id
    )
    assert third.usage is not None and third.usage.input_tokens > second.usage.input_tokens


async def test_stored_responses_get_delete_and_input_items(client: openai.AsyncOpenAI) -> None:
    items: Any = [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    response = await client.responses.create(model="gpt-4o-mini", input=items)
    stored = await client.responses.retrieve(response.id)
    assert stored.output_text == response.output_text and stored.id == response.id
    listed = await client.responses.input_items.list(response.id)
    texts = [item.content[0].text for item in listed.data]  # type: ignore[union-attr]
    assert texts == ["three", "two", "one"]  # newest first, as the API lists them
    page = await client.responses.input_items.list(response.id, limit=1, order="asc")
    assert [i.content[0].text for i in page.data] == ["one"]  # type: ignore[union-attr]
    assert page.has_more is True
    walked = [
        i.content[0].text
        async for i in client.responses.input_items.list(  # type: ignore[union-attr]
            response.id, limit=1, order="asc"
        )
    ]
    assert walked == ["one", "two", "three"]  # the client follows the cursors
    with pytest.raises(openai.BadRequestError) as lost:  # a cursor of no item of the list
        await client.responses.input_items.list(response.id, after="msg_of_nothing")
    assert (lost.value.code, lost.value.param) == ("invalid_cursor", "after")  # type: ignore[attr-defined]
    deleted = await client.delete(f"/responses/{response.id}", cast_to=httpx.Response)
    assert deleted.json() == {"id": response.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError) as caught:
        await client.responses.create(
            model="gpt-4o-mini", input="more", previous_response_id=response.id
        )
    assert caught.value.code == "previous_response_not_found"


async def test_store_false_keeps_nothing(client: openai.AsyncOpenAI) -> None:
    response = await client.responses.create(model="gpt-4o-mini", input="Hi", store=False)
    assert response.store is False
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(response.id)


async def test_another_workspaces_response_is_a_404(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    response = await client.responses.create(model="gpt-4o-mini", input="Secret plans")
    workspace = (await http.post("/v1/management/workspaces", json={"name": "other"})).json()
    created = await http.post(
        "/v1/management/api-keys", json={"name": "k"}, headers={"x-workspace-id": workspace["id"]}
    )
    assert created.status_code == 201, created.text
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=created.json()["key"], max_retries=0
    ) as other:
        with pytest.raises(openai.NotFoundError):
            await other.responses.retrieve(response.id)
        with pytest.raises(openai.NotFoundError):
            await other.responses.input_items.list(response.id)
        with pytest.raises(openai.NotFoundError):
            await other.responses.delete(response.id)
        with pytest.raises(openai.NotFoundError) as cancelled:
            await other.responses.cancel(response.id)
        assert cancelled.value.code == "response_not_found"
        with pytest.raises(openai.NotFoundError) as caught:
            await other.responses.create(
                model="gpt-4o-mini", input="Go on", previous_response_id=response.id
            )
        assert caught.value.code == "previous_response_not_found"
    assert (await client.responses.retrieve(response.id)).output_text  # still there


@pytest.mark.parametrize("stream", [False, True])
async def test_a_failing_vendor_falls_back(
    client: openai.AsyncOpenAI, gateway: RunningGateway, stream: bool
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    if stream:
        events = [
            e
            async for e in await client.responses.create(
                model="gpt-4o-mini", input="Hello", stream=True
            )
        ]
        response = events[-1].response  # type: ignore[union-attr]
    else:
        response = await client.responses.create(model="gpt-4o-mini", input="Hello")
    assert response.status == "completed" and response.output_text
    fallback = extra(response)["_gateway"]["fallback"]
    assert fallback["fallback_attempted"] is True
    assert [a["outcome"] for a in fallback["attempts"]] == ["failed", "won"]
    assert response.model != "gpt-4o-mini"


async def test_a_failure_mid_stream_is_response_failed(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(
        Fault(model=upstream("claude-haiku-4-5"), stop_after_chunks=2, code="stream_error")
    )
    stream = await client.responses.create(
        model="claude-haiku-4-5", input="Tell me a long story", stream=True
    )
    events = [event async for event in stream]
    assert events[-1].type == "response.failed"
    failed = events[-1].response  # type: ignore[union-attr]
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "model_overloaded"  # the vendor's overloaded_error event
    assert (await client.responses.retrieve(failed.id)).status == "failed"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"tools": [{"type": "file_search", "vector_store_ids": ["vs"]}]}, "tools[0].type"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_url": "u"}]}]},
            "input[0].content[0].file_url",
        ),
        ({"background": True, "store": False}, "store"),
        ({"background": "yes"}, "background"),
        ({"background_options": {"x": 1}}, "background_options"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"truncation": "sometimes"}, "truncation"),
        ({"top_logprobs": 21}, "top_logprobs"),
        ({"include": ["file_search_call.results"]}, "include[0]"),
        ({"text": {"format": {"type": "json_schema", "schema": {}}}}, "text.format.name"),
        ({"tool_choice": {"type": "function", "name": "nope"}, "tools": [WEATHER]}, "tool_choice"),
        ({"metadata": {"k": 1}}, "metadata"),
        ({"max_output_tokens": 0}, "max_output_tokens"),
        ({"frobnicate": 1}, "frobnicate"),
    ],
)
async def test_what_cannot_be_honoured_is_a_400_naming_it(
    client: openai.AsyncOpenAI, body: dict[str, Any], param: str
) -> None:
    request = {"model": "gpt-4o-mini", "input": "Hi", **body}
    with pytest.raises(openai.BadRequestError) as caught:
        await client.post("/responses", body=request, cast_to=httpx.Response)
    assert caught.value.param == param  # type: ignore[attr-defined]


async def test_a_previous_response_that_never_was_is_a_404(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.responses.create(
            model="gpt-4o-mini", input="Hi", previous_response_id="resp_nothing"
        )
    assert caught.value.code == "previous_response_not_found"


@pytest.mark.parametrize("stream", [False, True])
async def test_the_cache_serves_the_same_question_through_any_door(
    client: openai.AsyncOpenAI, stream: bool
) -> None:
    """The cache keys the canonical request: a chat completion's answer serves the same
    question asked as a response, billed nothing, in this API's shape."""
    question = f"What is a cache? ({stream})"
    chat = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    if stream:
        events = [
            e
            async for e in await client.responses.create(
                model="gpt-4o-mini", input=question, stream=True
            )
        ]
        assert [e.sequence_number for e in events] == list(range(len(events)))
        response = events[-1].response  # type: ignore[union-attr]
    else:
        response = await client.responses.create(model="gpt-4o-mini", input=question)
    service = extra(response)["service"]
    assert service["cache"]["hit"] is True and service["cost"]["total"] == 0
    assert response.output_text == chat.choices[0].message.content
    assert (await client.responses.retrieve(response.id)).output_text == response.output_text


async def test_reasoning_reaches_the_models_that_have_it(client: openai.AsyncOpenAI) -> None:
    """`reasoning.effort` is chat's `reasoning_effort`: taken by a model with a reasoning
    control, refused naming it by one without (never dropped)."""
    for model in ("gpt-5-mini", "claude-haiku-4-5"):
        response = await client.responses.create(
            model=model, input="Hi", reasoning={"effort": "low"}
        )
        assert response.status == "completed" and response.reasoning is not None
        assert response.reasoning.effort == "low"
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="gpt-4o-mini", input="Hi", reasoning={"effort": "low"})
    assert caught.value.param == "reasoning_effort"  # type: ignore[attr-defined]
