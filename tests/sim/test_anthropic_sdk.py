"""The Anthropic simulator end to end over real HTTP on 127.0.0.1.

Two clients talk to it: the official `anthropic` SDK (so the simulator is proven to speak
the real wire protocol), and the gateway's own `AnthropicProvider` (so the adapter is
proven against that same protocol, errors and broken streams included).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import pytest
import trio
from anthropic import omit

from providers.anthropic import AnthropicProvider
from providers.base import ProviderEndpoint
from providers.errors import (
    AuthenticationFailed,
    ContextLengthExceeded,
    InvalidUpstreamRequest,
    ModelNotFound,
    ModelOverloaded,
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
)
from providers.sim import anthropic as sim_anthropic
from providers.sim import content
from providers.sim.core import Fault
from providers.sim.server import SimConfig, SimServer, serve_simulator
from providers.types import ChatChunk, ChatRequest, ToolCallDelta

MODEL = "claude-sim-1"
DEADLINE = 10
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "kelvin"]}},
        "required": ["city", "unit"],
    },
}
HELLO = [{"role": "user", "content": "Hello there"}]


@pytest.fixture
async def sim(nursery: trio.Nursery) -> SimServer:
    server: SimServer = await nursery.start(serve_simulator, "127.0.0.1", 0, SimConfig())
    return server


@pytest.fixture
async def sdk(sim: SimServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url=sim.base_url("anthropic"), max_retries=0
    )
    async with client:
        yield client


def fault(sim: SimServer, **fields: Any) -> None:
    sim.faults.add(Fault(model=MODEL, vendor="anthropic", remaining=1, **fields))


# -- the official SDK ----------------------------------------------------------------------


async def test_sdk_create(sdk: anthropic.AsyncAnthropic) -> None:
    with trio.fail_after(DEADLINE):
        message = await sdk.messages.create(
            model=MODEL, max_tokens=256, system="Be brief.", messages=HELLO
        )
    assert message.type == "message"
    assert message.role == "assistant"
    assert message.model == MODEL
    assert message.stop_reason == "end_turn"
    [block] = message.content
    assert block.type == "text"
    assert block.text.endswith(".")
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens == len(block.text.split())


async def test_sdk_max_tokens_and_stop_sequences(sdk: anthropic.AsyncAnthropic) -> None:
    with trio.fail_after(DEADLINE):
        whole = await sdk.messages.create(model=MODEL, max_tokens=256, messages=HELLO)
        capped = await sdk.messages.create(model=MODEL, max_tokens=3, messages=HELLO)
        text = whole.content[0].text  # type: ignore[union-attr]
        stop = text.split()[4]
        stopped = await sdk.messages.create(
            model=MODEL, max_tokens=256, messages=HELLO, stop_sequences=[stop]
        )
    assert capped.stop_reason == "max_tokens"
    assert capped.usage.output_tokens == 3
    assert text.startswith(capped.content[0].text)  # type: ignore[union-attr]
    assert stopped.stop_reason == "stop_sequence"
    assert stopped.stop_sequence == stop
    assert stopped.content[0].text == text[: text.index(stop)]  # type: ignore[union-attr]


async def test_sdk_stream_helper_matches_whole_answer(sdk: anthropic.AsyncAnthropic) -> None:
    with trio.fail_after(DEADLINE):
        whole = await sdk.messages.create(model=MODEL, max_tokens=256, messages=HELLO)
        async with sdk.messages.stream(model=MODEL, max_tokens=256, messages=HELLO) as stream:
            pieces = [text async for text in stream.text_stream]
            final = await stream.get_final_message()
    assert len(pieces) > 1
    assert "".join(pieces) == whole.content[0].text  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens == whole.usage.input_tokens
    assert final.usage.output_tokens == whole.usage.output_tokens


async def test_sdk_raw_stream_event_order(sdk: anthropic.AsyncAnthropic) -> None:
    with trio.fail_after(DEADLINE):
        stream = await sdk.messages.create(model=MODEL, max_tokens=256, messages=HELLO, stream=True)
        kinds = [event.type async for event in stream]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert set(kinds[2:-3]) == {"content_block_delta"}
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]


async def test_sdk_tool_use_round_trip(sdk: anthropic.AsyncAnthropic) -> None:
    ask = [{"role": "user", "content": "What is the weather in Oslo?"}]
    with trio.fail_after(DEADLINE):
        first = await sdk.messages.create(
            model=MODEL, max_tokens=256, messages=ask, tools=[WEATHER]
        )
        [call] = first.content
        assert call.type == "tool_use"
        result = {"type": "tool_result", "tool_use_id": call.id, "content": "12 degrees"}
        second = await sdk.messages.create(
            model=MODEL,
            max_tokens=256,
            tools=[WEATHER],
            messages=[
                *ask,
                {"role": "assistant", "content": [call.model_dump(exclude_none=True)]},
                {"role": "user", "content": [result]},
            ],
        )
    assert first.stop_reason == "tool_use"
    assert call.name == "get_weather"
    assert call.id.startswith("toolu_")
    assert set(call.input) == {"city", "unit"}  # type: ignore[arg-type]
    assert call.input["unit"] == "celsius"  # type: ignore[index]
    assert second.stop_reason == "end_turn"
    assert second.content[0].type == "text"


async def test_sdk_streamed_tool_use(sdk: anthropic.AsyncAnthropic) -> None:
    ask = [{"role": "user", "content": "What is the weather in Oslo?"}]
    choice: Any = {"type": "tool", "name": "get_weather"}
    with trio.fail_after(DEADLINE):
        whole = await sdk.messages.create(
            model=MODEL, max_tokens=256, messages=ask, tools=[WEATHER], tool_choice=choice
        )
        async with sdk.messages.stream(
            model=MODEL, max_tokens=256, messages=ask, tools=[WEATHER], tool_choice=choice
        ) as stream:
            final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert final.content[0].input == whole.content[0].input  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (403, anthropic.PermissionDeniedError, "permission_error"),
    ],
)
async def test_sdk_fault_statuses(
    sim: SimServer,
    sdk: anthropic.AsyncAnthropic,
    status: int,
    error_class: type[anthropic.APIStatusError],
    error_type: str,
) -> None:
    fault(sim, status=status)
    with trio.fail_after(DEADLINE), pytest.raises(error_class) as caught:
        await sdk.messages.create(model=MODEL, max_tokens=256, messages=HELLO)
    assert caught.value.status_code == status
    assert caught.value.body["error"]["type"] == error_type  # type: ignore[index]
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "1"


async def test_sdk_request_errors(sim: SimServer, sdk: anthropic.AsyncAnthropic) -> None:
    with trio.fail_after(DEADLINE):
        with pytest.raises(anthropic.NotFoundError):
            await sdk.messages.create(model="unknown-model", max_tokens=9, messages=HELLO)
        with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
            await sdk.messages.create(model=MODEL, max_tokens=0, messages=HELLO)
        with pytest.raises(anthropic.AuthenticationError):
            await sdk.messages.create(
                model=MODEL, max_tokens=9, messages=HELLO, extra_headers={"Authorization": omit}
            )


async def test_missing_max_tokens_is_invalid_request(sim: SimServer) -> None:
    body = {"model": MODEL, "messages": HELLO}
    async with httpx.AsyncClient() as client:
        with trio.fail_after(DEADLINE):
            response = await client.post(
                sim.base_url("anthropic") + "/v1/messages",
                json=body,
                headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
            )
    assert response.status_code == 400
    assert response.json()["type"] == "error"
    assert response.json()["error"] == {
        "type": "invalid_request_error",
        "message": "max_tokens: Field required",
    }


async def test_sdk_sees_mid_stream_error_event(
    sim: SimServer, sdk: anthropic.AsyncAnthropic
) -> None:
    fault(sim, stop_after_chunks=2, code="stream_error", message="Overloaded")
    texts: list[str] = []
    with trio.fail_after(DEADLINE), pytest.raises(anthropic.APIStatusError) as caught:
        async with sdk.messages.stream(model=MODEL, max_tokens=256, messages=HELLO) as stream:
            async for text in stream.text_stream:
                texts.append(text)
    assert len(texts) == 2
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


async def test_sdk_models_list(sdk: anthropic.AsyncAnthropic) -> None:
    with trio.fail_after(DEADLINE):
        page = await sdk.models.list()
        one = await sdk.models.retrieve(page.data[0].id)
    assert [m.id for m in page.data] and all(m.type == "model" for m in page.data)
    assert one.id == page.data[0].id


# -- the gateway's adapter -----------------------------------------------------------------


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def adapter(sim: SimServer, http: httpx.AsyncClient, api_key: str = "k") -> AnthropicProvider:
    endpoint = ProviderEndpoint("anthropic", sim.base_url("anthropic"), api_key)
    return AnthropicProvider(http, endpoint)


def chat_request(**fields: Any) -> ChatRequest:
    fields.setdefault("model", MODEL)
    fields.setdefault("messages", [{"role": "system", "content": "Be brief."}, *HELLO])
    return ChatRequest(**fields)


async def collect(provider: AnthropicProvider, request: ChatRequest) -> list[ChatChunk]:
    async with provider.chat_stream(request) as chunks:
        return [chunk async for chunk in chunks]


async def test_adapter_chat_and_stream_agree(sim: SimServer, http: httpx.AsyncClient) -> None:
    provider = adapter(sim, http)
    with trio.fail_after(DEADLINE):
        whole = await provider.chat(chat_request())
        chunks = await collect(provider, chat_request())
    assert whole.finish_reason == "stop"
    assert whole.content
    assert whole.usage.prompt_tokens > 0
    assert "".join(c.content or "" for c in chunks) == whole.content
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].usage == whole.usage


async def test_adapter_tool_calls(sim: SimServer, http: httpx.AsyncClient) -> None:
    provider = adapter(sim, http)
    tool = {
        "type": "function",
        "function": {
            "name": WEATHER["name"],
            "description": WEATHER["description"],
            "parameters": WEATHER["input_schema"],
        },
    }
    ask = [{"role": "user", "content": "What is the weather in Oslo?"}]
    with trio.fail_after(DEADLINE):
        whole = await provider.chat(chat_request(messages=ask, tools=[tool]))
        chunks = await collect(provider, chat_request(messages=ask, tools=[tool]))
        [call] = whole.tool_calls
        answered = await provider.chat(
            chat_request(
                tools=[tool],
                messages=[
                    *ask,
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": call.arguments},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": call.id, "content": "12 degrees"},
                ],
            )
        )
    assert whole.finish_reason == "tool_calls"
    assert call.name == "get_weather"
    assert json.loads(call.arguments)["unit"] == "celsius"
    deltas: list[ToolCallDelta] = [d for c in chunks for d in c.tool_calls]
    assert deltas[0] == ToolCallDelta(index=0, id=call.id, name="get_weather")
    assert len(deltas) > 2  # the arguments came in several pieces
    assert json.loads("".join(d.arguments for d in deltas)) == json.loads(call.arguments)
    assert chunks[-1].finish_reason == "tool_calls"
    assert answered.finish_reason == "stop"
    assert answered.content


@pytest.mark.parametrize(
    ("fault_fields", "error_class"),
    [
        ({"status": 429}, ModelOverloaded),
        ({"status": 529}, ModelOverloaded),
        ({"status": 500}, UpstreamHTTPError),
        ({"status": 401}, AuthenticationFailed),
        ({"status": 400}, InvalidUpstreamRequest),
        ({"status": 413}, InvalidUpstreamRequest),
    ],
)
@pytest.mark.parametrize("streamed", [False, True])
async def test_adapter_maps_fault_statuses(
    sim: SimServer,
    http: httpx.AsyncClient,
    fault_fields: dict[str, Any],
    error_class: type[ProviderError],
    streamed: bool,
) -> None:
    fault(sim, **fault_fields)
    provider = adapter(sim, http)
    with trio.fail_after(DEADLINE), pytest.raises(error_class) as caught:
        if streamed:
            await collect(provider, chat_request())
        else:
            await provider.chat(chat_request())
    assert type(caught.value) is error_class
    if fault_fields["status"] == 429:
        assert isinstance(caught.value, ModelOverloaded)
        assert caught.value.retry_after == 1


async def test_adapter_request_errors(sim: SimServer, http: httpx.AsyncClient) -> None:
    with trio.fail_after(DEADLINE):
        with pytest.raises(AuthenticationFailed):
            await adapter(sim, http, api_key="").chat(chat_request())
        with pytest.raises(ModelNotFound) as missing:
            await adapter(sim, http).chat(chat_request(model="unknown-claude"))
        huge = [{"role": "user", "content": "word " * 170_000}]
        with pytest.raises(ContextLengthExceeded) as too_long:
            await adapter(sim, http).chat(chat_request(messages=huge))
    assert missing.value.model == "unknown-claude"
    assert too_long.value.max_tokens == 200_000
    assert (too_long.value.requested_tokens or 0) > 200_000


async def test_adapter_stream_cut_is_interrupted(sim: SimServer, http: httpx.AsyncClient) -> None:
    fault(sim, stop_after_chunks=3)
    received: list[ChatChunk] = []
    with trio.fail_after(DEADLINE), pytest.raises(StreamInterrupted):
        async with adapter(sim, http).chat_stream(chat_request()) as chunks:
            async for chunk in chunks:
                received.append(chunk)
    assert len(received) == 3
    assert all(c.finish_reason is None for c in received)


async def test_adapter_mid_stream_error_event(sim: SimServer, http: httpx.AsyncClient) -> None:
    fault(sim, stop_after_chunks=2, code="stream_error")
    received: list[ChatChunk] = []
    with trio.fail_after(DEADLINE), pytest.raises(ModelOverloaded):
        async with adapter(sim, http).chat_stream(chat_request()) as chunks:
            async for chunk in chunks:
                received.append(chunk)
    assert len(received) == 2


async def test_adapter_list_models(sim: SimServer, http: httpx.AsyncClient) -> None:
    with trio.fail_after(DEADLINE):
        models = await adapter(sim, http).list_models()
    assert models and all(model.startswith("claude-") for model in models)


async def test_adapter_cancelled_stream_closes_upstream(
    sim: SimServer, http: httpx.AsyncClient
) -> None:
    fault(sim, stop_after_chunks=1, stall_ms=60_000)
    received: list[ChatChunk] = []
    with trio.fail_after(DEADLINE):
        with trio.move_on_after(0.2) as scope:
            async with adapter(sim, http).chat_stream(chat_request()) as chunks:
                async for chunk in chunks:
                    received.append(chunk)
        assert scope.cancelled_caught
        # The simulator exposes counters, not events: poll until it notices the hang-up.
        while sim.stats.client_disconnects == 0:  # noqa: ASYNC110
            await trio.sleep(0.01)
    assert len(received) == 1
    assert sim.stats.streams_completed == 0


# -- the simulator's pure parts ------------------------------------------------------------


@pytest.mark.parametrize(
    ("stops", "kept", "matched"),
    [
        ([], ["Ab", " cd", " ef"], None),
        (["cd"], ["Ab", " "], "cd"),
        (["b c"], ["A"], "b c"),  # a stop sequence spanning two tokens
        (["ef", " c"], ["Ab"], " c"),  # the earliest match wins
        (["Ab"], [], "Ab"),
    ],
)
def test_cut_at_stop(stops: list[str], kept: list[str], matched: str | None) -> None:
    assert content.cut_at_stop(["Ab", " cd", " ef"], stops) == (kept, matched)


@pytest.mark.parametrize(
    ("fields", "stream", "status", "error_type"),
    [
        ({"status": 529}, False, 529, "overloaded_error"),
        ({"status": 529}, True, 529, "overloaded_error"),
        ({"status": 400, "code": "request_too_large"}, False, 400, "request_too_large"),
        ({"stop_after_chunks": 2, "code": "stream_error"}, True, None, None),  # an event later
        ({"stop_after_chunks": 2, "code": "stream_error"}, False, 529, "overloaded_error"),
        ({"stop_after_chunks": 2, "status": 500}, True, None, None),
        ({"stop_after_chunks": 2, "status": 500}, False, 500, "api_error"),
        ({"stop_after_chunks": 2}, True, None, None),  # a dropped connection later
        ({"delay_ms": 5}, False, None, None),
    ],
)
def test_fault_conventions(
    fields: dict[str, Any], stream: bool, status: int | None, error_type: str | None
) -> None:
    answer = sim_anthropic.immediate_error(Fault(model="m", **fields), stream)
    if status is None:
        assert answer is None
        return
    assert answer is not None
    assert answer.status == status
    assert json.loads(answer.body)["error"]["type"] == error_type


@pytest.mark.parametrize(
    ("fields", "event_type"),
    [
        ({"stop_after_chunks": 1, "code": "stream_error"}, "overloaded_error"),
        ({"stop_after_chunks": 1, "code": "api_error"}, "api_error"),
        ({"stop_after_chunks": 1, "status": 429}, "rate_limit_error"),
        ({"stop_after_chunks": 1}, None),
        ({"code": "stream_error"}, None),
    ],
)
def test_stream_error_type(fields: dict[str, Any], event_type: str | None) -> None:
    assert sim_anthropic.stream_error_type(Fault(model="m", **fields)) == event_type
