"""Legacy `functions` requests are answered in the legacy shape, whole and streamed
(issue 22, item 5): `message.function_call` / `delta.function_call` and the finish
reason `function_call`, which is all an old client reads."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

WEATHER: Any = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
ASK: Any = [{"role": "user", "content": "Weather in Oslo?"}]
MODELS = ["gpt-4o-mini", "claude-haiku-4-5", "command-a-03-2025"]


@pytest.mark.parametrize("model", MODELS)
async def test_a_legacy_call_comes_back_as_function_call(
    client: openai.AsyncOpenAI, model: str
) -> None:
    answer = await client.chat.completions.create(
        model=model, messages=ASK, functions=[WEATHER], function_call="auto"
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "function_call"
    assert choice.message.tool_calls is None
    call = choice.message.function_call
    assert call is not None and call.name == "get_weather"
    assert isinstance(json.loads(call.arguments)["city"], str)


@pytest.mark.parametrize("model", MODELS)
async def test_a_streamed_legacy_call_comes_back_as_function_call(
    client: openai.AsyncOpenAI, model: str
) -> None:
    whole = await client.chat.completions.create(
        model=model, messages=ASK, functions=[WEATHER], function_call={"name": "get_weather"}
    )
    stream = await client.chat.completions.create(
        model=model,
        messages=ASK,
        functions=[WEATHER],
        function_call={"name": "get_weather"},
        stream=True,
    )
    names, arguments, finish = [], "", []
    async for chunk in stream:
        for choice in chunk.choices:
            assert choice.delta.tool_calls is None
            if choice.delta.function_call is not None:
                names.append(choice.delta.function_call.name)
                arguments += choice.delta.function_call.arguments or ""
            if choice.finish_reason:
                finish.append(choice.finish_reason)
    assert [name for name in names if name] == ["get_weather"]
    assert finish == ["function_call"]
    expected = whole.choices[0].message.function_call
    assert expected is not None
    assert json.loads(arguments) == json.loads(expected.arguments)


async def test_a_legacy_request_answered_in_text_is_unchanged(
    client: openai.AsyncOpenAI,
) -> None:
    history: Any = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
        },
        {"role": "function", "name": "get_weather", "content": '{"temp": 3}'},
    ]
    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=history, functions=[WEATHER]
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.content and choice.message.function_call is None


async def test_tools_requests_keep_tool_calls(client: openai.AsyncOpenAI) -> None:
    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=ASK, tools=[{"type": "function", "function": WEATHER}]
    )
    assert answer.choices[0].finish_reason == "tool_calls"
    assert answer.choices[0].message.tool_calls
    assert answer.choices[0].message.function_call is None


@pytest.mark.parametrize(
    ("extra", "code", "param", "value"),
    [
        (
            {"function_call": {"name": "nope"}},
            "invalid_tool_choice",
            "function_call",
            {"name": "nope"},
        ),
        (
            {"functions": [{"name": "has space"}]},
            "invalid_request",
            "functions[0].name",
            "has space",
        ),
        ({"functions": ["get_weather"]}, "invalid_request", "functions[0]", "get_weather"),
    ],
)
async def test_a_bad_legacy_request_names_the_field_the_client_sent(
    client: openai.AsyncOpenAI, extra: dict[str, Any], code: str, param: str, value: Any
) -> None:
    """The errors named the converted fields (`tool_choice`, `tools[0].function.name`),
    which a legacy request does not have."""
    body = {"functions": [WEATHER]} | extra
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=ASK, extra_body=body)
    error: Any = caught.value.body
    assert (error["code"], error["param"], error["value"]) == (code, param, value)
    assert param in error["message"] and "tool" not in error["message"]
