"""`POST /v1/messages` through the official `anthropic` client, served by any chat vendor.

The client sees Anthropic's Messages API (its key in `x-api-key`, as the SDK sends it);
behind it, chat's path and the simulators. Errors raise the SDK's own exception classes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import pytest

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.test_chat_api import upstream

MODELS = ["gpt-4o-mini", "claude-haiku-4-5"]
HELLO: Any = [{"role": "user", "content": "Hello there"}]
WEATHER: Any = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


@pytest.fixture
async def claude(gateway: RunningGateway) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The official client with only `base_url` and `api_key` changed (no retries)."""
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url, api_key=ADMIN_KEY, max_retries=0
    ) as c:
        yield c


def stop_reason(message: Any, max_tokens: int) -> str:
    """What the answer's length says its stop reason is (the OpenAI simulator writes an
    answer of `max_tokens` tokens when given one; Anthropic's is its natural length)."""
    return "max_tokens" if message.usage.output_tokens == max_tokens else "end_turn"


@pytest.mark.parametrize("model", MODELS)
async def test_a_message_from_an_openai_and_an_anthropic_model(
    claude: anthropic.AsyncAnthropic, model: str
) -> None:
    message = await claude.messages.create(
        model=model,
        max_tokens=200,
        system="Be brief.",
        messages=HELLO,
        metadata={"user_id": "u-1"},
        # removed from the current SDK's signature; older clients still send them
        extra_body={"temperature": 0.5, "top_p": 0.9},
    )
    assert message.type == "message" and message.role == "assistant"
    assert message.model == model
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text  # type: ignore[union-attr]
    assert message.stop_reason == stop_reason(message, 200)
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    service = (message.model_extra or {})["service"]
    assert service["provider"] == ("openai" if model.startswith("gpt") else "anthropic")


async def test_top_k_reaches_the_vendors_that_have_it(claude: anthropic.AsyncAnthropic) -> None:
    """Anthropic has `top_k`; OpenAI has no such setting, so it is refused naming it
    rather than dropped."""
    message = await claude.messages.create(
        model="claude-haiku-4-5", max_tokens=20, messages=HELLO, extra_body={"top_k": 40}
    )
    assert message.content
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(
            model="gpt-4o-mini", max_tokens=20, messages=HELLO, extra_body={"top_k": 40}
        )
    assert caught.value.body["error"]["param"] == "top_k"  # type: ignore[index]


async def test_max_tokens_cuts_the_answer(claude: anthropic.AsyncAnthropic) -> None:
    message = await claude.messages.create(model="gpt-4o-mini", max_tokens=3, messages=HELLO)
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 3


@pytest.mark.parametrize("model", MODELS)
async def test_the_stream_gives_the_same_message(
    claude: anthropic.AsyncAnthropic, model: str
) -> None:
    whole = await claude.messages.create(model=model, max_tokens=200, messages=HELLO)
    kinds: list[str] = []
    async with claude.messages.stream(model=model, max_tokens=200, messages=HELLO) as stream:
        async for event in stream:
            kinds.append(event.type)
        final = await stream.get_final_message()
    assert kinds[0] == "message_start"
    assert kinds[1:2] == ["content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert final.content[0].text == whole.content[0].text  # type: ignore[union-attr]
    assert final.stop_reason == whole.stop_reason == stop_reason(whole, 200)
    assert final.usage.output_tokens == whole.usage.output_tokens


async def test_the_raw_stream_has_pings_and_named_events(http: httpx.AsyncClient) -> None:
    body = {"model": "gpt-4o-mini", "max_tokens": 50, "messages": HELLO, "stream": True}
    async with http.stream("POST", "/v1/messages", json=body) as response:
        text = (await response.aread()).decode()
    names = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-1] == "message_stop"


@pytest.mark.parametrize("model", MODELS)
async def test_tool_use_round_trip(claude: anthropic.AsyncAnthropic, model: str) -> None:
    asked: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = await claude.messages.create(
        model=model, max_tokens=200, messages=asked, tools=[WEATHER]
    )
    assert first.stop_reason == "tool_use"
    use = next(block for block in first.content if block.type == "tool_use")
    assert use.name == "get_weather" and isinstance(use.input, dict)
    follow: Any = [
        *asked,
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny"}],
        },
    ]
    second = await claude.messages.create(
        model=model, max_tokens=200, messages=follow, tools=[WEATHER]
    )
    assert second.stop_reason == stop_reason(second, 200)
    assert second.content[0].type == "text"


async def test_streamed_tool_use(claude: anthropic.AsyncAnthropic) -> None:
    async with claude.messages.stream(
        model="gpt-4o-mini",
        max_tokens=200,
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[WEATHER],
        tool_choice={"type": "tool", "name": "get_weather"},
    ) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    use = final.content[-1]
    assert use.type == "tool_use" and use.name == "get_weather"
    assert isinstance(use.input, dict) and use.input  # the SDK parsed the streamed JSON


async def test_count_tokens(claude: anthropic.AsyncAnthropic) -> None:
    short = await claude.messages.count_tokens(model="claude-haiku-4-5", messages=HELLO)
    longer = await claude.messages.count_tokens(
        model="gpt-4o-mini",
        system="You are a careful assistant who answers in full sentences.",
        messages=HELLO,
        tools=[WEATHER],
    )
    assert 0 < short.input_tokens < longer.input_tokens


@pytest.mark.parametrize("stream", [False, True])
async def test_a_failing_vendor_falls_back(
    claude: anthropic.AsyncAnthropic, gateway: RunningGateway, stream: bool
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model=upstream("claude-haiku-4-5"), status=529))
    if stream:
        async with claude.messages.stream(
            model="claude-haiku-4-5", max_tokens=100, messages=HELLO
        ) as events:
            message = await events.get_final_message()
        extra = None
    else:
        message = await claude.messages.create(
            model="claude-haiku-4-5", max_tokens=100, messages=HELLO
        )
        extra = message.model_extra or {}
    assert message.content[0].text  # type: ignore[union-attr]
    assert message.model != "claude-haiku-4-5"
    if extra is not None:
        attempts = extra["_gateway"]["fallback"]["attempts"]
        assert [a["outcome"] for a in attempts] == ["failed", "won"]


async def test_errors_raise_the_sdks_own_exceptions(
    claude: anthropic.AsyncAnthropic, gateway: RunningGateway
) -> None:
    with pytest.raises(anthropic.BadRequestError) as bad:
        await claude.messages.create(model="gpt-4o-mini", max_tokens=0, messages=HELLO)
    assert bad.value.body["type"] == "error"  # type: ignore[index]
    assert bad.value.type == "invalid_request_error"
    assert bad.value.body["error"]["param"] == "max_tokens"  # type: ignore[index]
    with pytest.raises(anthropic.NotFoundError) as missing:
        await claude.messages.create(model="claude-nine", max_tokens=10, messages=HELLO)
    assert missing.value.type == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as tool:
        await claude.messages.create(
            model="gpt-4o-mini",
            max_tokens=10,
            messages=HELLO,
            tools=[{"type": "web_search_20250305", "name": "web_search"}],  # type: ignore[list-item]
        )
    assert tool.value.body["error"]["param"] == "tools.0.type"  # type: ignore[index]
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url, api_key="gw_wrong_key_0000000000000000", max_retries=0
    ) as stranger:
        with pytest.raises(anthropic.AuthenticationError) as denied:
            await stranger.messages.create(model="gpt-4o-mini", max_tokens=10, messages=HELLO)
    assert denied.value.type == "authentication_error"
    assert denied.value.body["type"] == "error"  # type: ignore[index]


async def test_whole_numbers_written_with_a_point_are_integers(http: httpx.AsyncClient) -> None:
    """JSON (and the document's JSON Schema) counts 16.0 as an integer: it was a 400."""
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 16.0,
        "top_k": 5.0,
        "messages": HELLO,
    }
    answer = await http.post("/v1/messages", json=body)
    assert answer.status_code == 200, answer.text
    body["max_tokens"] = 16.5
    refused = await http.post("/v1/messages", json=body)
    assert (refused.status_code, refused.json()["error"]["param"]) == (400, "max_tokens")


async def test_turns_of_thinking_only_leave_nothing_to_answer(http: httpx.AsyncClient) -> None:
    """Thinking blocks are not sent on; a conversation of nothing else was refused as if
    its shape were wrong (`invalid_request`, "'messages' must be a non-empty array")."""
    thoughts = [{"role": "user", "content": [{"type": "thinking", "thinking": "hm"}]}]
    body = {"model": "claude-haiku-4-5", "max_tokens": 16, "messages": thoughts}
    answer = await http.post("/v1/messages", json=body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("nothing_to_answer", "messages")


async def test_a_bearer_token_and_the_anthropic_headers_are_accepted(
    gateway: RunningGateway,
) -> None:
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url,
        auth_token=ADMIN_KEY,
        max_retries=0,
        default_headers={"anthropic-beta": "tools-2024-04-04"},
    ) as bearer:
        message = await bearer.messages.create(model="gpt-4o-mini", max_tokens=10, messages=HELLO)
    assert message.content


async def test_a_wrong_method_is_anthropic_shaped(http: httpx.AsyncClient) -> None:
    answer = await http.get("/v1/messages")
    assert answer.status_code == 405
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == "invalid_request_error"


async def test_a_failure_mid_stream_is_an_error_event(
    claude: anthropic.AsyncAnthropic, gateway: RunningGateway
) -> None:
    """After the first token there is no falling back: the stream ends with Anthropic's
    `error` event, which the SDK raises as an API error carrying its type."""
    assert gateway.sim is not None
    gateway.sim.faults.add(
        Fault(model=upstream("claude-haiku-4-5"), stop_after_chunks=2, code="stream_error")
    )
    received: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with claude.messages.stream(
            model="claude-haiku-4-5", max_tokens=200, messages=HELLO
        ) as stream:
            async for event in stream:
                received.append(event.type)
    assert received[0] == "message_start" and "content_block_delta" in received
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


async def test_thinking_reaches_the_models_that_have_it(claude: anthropic.AsyncAnthropic) -> None:
    thinking: Any = {"type": "enabled", "budget_tokens": 1024}
    message = await claude.messages.create(
        model="claude-haiku-4-5", max_tokens=2000, messages=HELLO, thinking=thinking
    )
    assert message.content
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(
            model="gpt-4o-mini", max_tokens=2000, messages=HELLO, thinking=thinking
        )
    assert caught.value.body["error"]["param"] == "reasoning_effort"  # type: ignore[index]
