"""Cohere's chat API v2 in the simulator, proven with the official `cohere` SDK, and our
adapter's chat over it (whole, streamed, tools, refusals).

The SDK runs synchronously in a worker thread while the simulator serves on the test's
trio loop; its retries are off so that errors surface at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import cohere
import httpx
import pytest
import trio
from cohere.errors import BadRequestError, NotFoundError, TooManyRequestsError

from providers import errors
from providers.base import ProviderEndpoint
from providers.cohere import CohereProvider
from providers.sim.core import Fault
from providers.sim.server import SimServer
from providers.types import ChatChunk, ChatRequest

T = TypeVar("T")
MODEL = "command-a-03-2025"
WEATHER_TOOL: Any = {  # Any: the SDK takes it for a ToolV2, our types for a Mapping
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
def sdk(sim: SimServer) -> Iterator[cohere.ClientV2]:
    with cohere.ClientV2(
        api_key="co-test", base_url=sim.base_url("cohere"), max_retries=0
    ) as client:
        yield client


@pytest.fixture
async def adapter(sim: SimServer) -> AsyncIterator[CohereProvider]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield CohereProvider(http, ProviderEndpoint("cohere", sim.base_url("cohere"), "co-test"))


async def in_thread(call: Callable[[], T]) -> T:
    with trio.fail_after(10):
        return await trio.to_thread.run_sync(call)


def user(text: str) -> Any:
    """One user turn, as the SDK (typed messages) and our `ChatRequest` both take it."""
    return [{"role": "user", "content": text}]


# -- the official SDK ----------------------------------------------------------------------


async def test_sdk_chat_text(sdk: cohere.ClientV2) -> None:
    answer = await in_thread(lambda: sdk.chat(model=MODEL, messages=user("Say hello")))
    assert answer.finish_reason == "COMPLETE"
    assert answer.message.content is not None
    text: Any = answer.message.content[0]
    assert text.type == "text" and text.text
    assert answer.usage is not None and answer.usage.billed_units is not None
    assert answer.usage.billed_units.output_tokens == len(text.text.split())


async def test_sdk_chat_max_tokens(sdk: cohere.ClientV2) -> None:
    answer = await in_thread(
        lambda: sdk.chat(model=MODEL, messages=user("Say hello"), max_tokens=3)
    )
    assert answer.finish_reason == "MAX_TOKENS"
    assert answer.usage is not None and answer.usage.billed_units is not None
    assert answer.usage.billed_units.output_tokens == 3


def _collect_stream(sdk: cohere.ClientV2, **kwargs: Any) -> list[Any]:
    return list(sdk.chat_stream(model=MODEL, **kwargs))


async def test_sdk_chat_stream_text(sdk: cohere.ClientV2) -> None:
    events = await in_thread(lambda: _collect_stream(sdk, messages=user("Say hello")))
    kinds = [event.type for event in events]
    assert kinds[0] == "message-start"
    assert kinds[1] == "content-start"
    assert kinds[-2:] == ["content-end", "message-end"]
    deltas = [e.delta.message.content.text for e in events if e.type == "content-delta"]
    whole = await in_thread(lambda: sdk.chat(model=MODEL, messages=user("Say hello")))
    assert whole.message.content is not None
    first: Any = whole.message.content[0]
    assert "".join(deltas) == first.text
    end = events[-1]
    assert end.delta.finish_reason == "COMPLETE"
    assert end.delta.usage.billed_units.output_tokens == len(deltas)


async def test_sdk_chat_tool_call(sdk: cohere.ClientV2) -> None:
    answer = await in_thread(
        lambda: sdk.chat(model=MODEL, messages=user("Weather in Paris?"), tools=[WEATHER_TOOL])
    )
    assert answer.finish_reason == "TOOL_CALL"
    assert answer.message.tool_plan
    calls = answer.message.tool_calls or []
    assert len(calls) == 1 and calls[0].function is not None
    assert calls[0].function.name == "get_weather"
    assert calls[0].id.startswith("get_weather_")
    assert isinstance(json.loads(calls[0].function.arguments or "")["city"], str)


async def test_sdk_chat_stream_tool_call(sdk: cohere.ClientV2) -> None:
    events = await in_thread(
        lambda: _collect_stream(sdk, messages=user("Weather?"), tools=[WEATHER_TOOL])
    )
    kinds = [event.type for event in events]
    assert kinds[0] == "message-start"
    assert "tool-plan-delta" in kinds
    assert kinds.index("tool-plan-delta") < kinds.index("tool-call-start")
    assert kinds[-2:] == ["tool-call-end", "message-end"]
    start = next(e for e in events if e.type == "tool-call-start")
    assert start.delta.message.tool_calls.function.name == "get_weather"
    pieces = [
        e.delta.message.tool_calls.function.arguments for e in events if e.type == "tool-call-delta"
    ]
    assert "city" in json.loads("".join(pieces))
    assert events[-1].delta.finish_reason == "TOOL_CALL"


async def test_sdk_chat_after_tool_result_answers_in_text(sdk: cohere.ClientV2) -> None:
    messages: Any = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_plan": "I will look it up.",
            "tool_calls": [
                {
                    "id": "get_weather_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "get_weather_1", "content": '{"temp": 21}'},
    ]
    answer = await in_thread(lambda: sdk.chat(model=MODEL, messages=messages, tools=[WEATHER_TOOL]))
    assert answer.finish_reason == "COMPLETE"
    assert not answer.message.tool_calls


async def test_sdk_chat_refusals(sim: SimServer, sdk: cohere.ClientV2) -> None:
    with pytest.raises(NotFoundError):
        await in_thread(lambda: sdk.chat(model="unknown-command", messages=user("hi")))
    with pytest.raises(BadRequestError):
        await in_thread(lambda: sdk.chat(model=MODEL, messages=[]))
    with pytest.raises(BadRequestError):
        await in_thread(lambda: sdk.chat(model="rerank-v3.5", messages=user("hi")))
    sim.faults.add(Fault(model=MODEL, status=429, remaining=1))
    with pytest.raises(TooManyRequestsError):
        await in_thread(lambda: sdk.chat(model=MODEL, messages=user("hi")))


# -- our adapter ---------------------------------------------------------------------------


async def test_adapter_chat_text(adapter: CohereProvider) -> None:
    result = await adapter.chat(ChatRequest(model=MODEL, messages=user("Say hello"), top_p=0.5))
    assert result.finish_reason == "stop"
    assert result.content
    assert result.model == MODEL
    assert result.usage.completion_tokens == len(result.content.split())


async def test_adapter_chat_stream_matches_whole(adapter: CohereProvider) -> None:
    request = ChatRequest(model=MODEL, messages=user("Say hello"), stop=["zzz"], user="u1")
    whole = await adapter.chat(request)
    chunks: list[ChatChunk] = []
    async with adapter.chat_stream(request) as stream:
        chunks.extend([chunk async for chunk in stream])
    assert "".join(c.content or "" for c in chunks) == whole.content
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].usage == whole.usage


async def test_adapter_chat_named_tool_choice(adapter: CohereProvider) -> None:
    other = {"type": "function", "function": {"name": "get_time"}}
    request = ChatRequest(
        model=MODEL,
        messages=user("Weather and time?"),
        tools=[other, WEATHER_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    result = await adapter.chat(request)
    assert result.finish_reason == "tool_calls"
    assert [call.name for call in result.tool_calls] == ["get_weather"]
    chunks: list[ChatChunk] = []
    async with adapter.chat_stream(request) as stream:
        chunks.extend([chunk async for chunk in stream])
    pieces = [piece for chunk in chunks for piece in chunk.tool_calls]
    assert pieces[0].id == result.tool_calls[0].id and pieces[0].name == "get_weather"
    assert "".join(p.arguments for p in pieces) == result.tool_calls[0].arguments
    assert chunks[-1].finish_reason == "tool_calls"


async def test_adapter_chat_tool_conversation(adapter: CohereProvider) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": '{"temp": 21}'},
    ]
    result = await adapter.chat(ChatRequest(model=MODEL, messages=messages, tools=[WEATHER_TOOL]))
    assert result.finish_reason == "stop" and result.content


@pytest.mark.parametrize(
    ("fault", "cls"),
    [
        (Fault(model=MODEL, status=429), errors.ModelOverloaded),
        (Fault(model=MODEL, status=503), errors.UpstreamUnavailable),
        (Fault(model=MODEL, stop_after_chunks=1), errors.StreamInterrupted),
    ],
    ids=["throttled", "unavailable", "cut"],
)
async def test_adapter_chat_stream_failures(
    sim: SimServer, adapter: CohereProvider, fault: Fault, cls: type[errors.ProviderError]
) -> None:
    sim.faults.add(fault)
    with pytest.raises(cls):
        async with adapter.chat_stream(ChatRequest(model=MODEL, messages=user("hi"))) as stream:
            async for _ in stream:
                pass


async def test_adapter_context_too_long(adapter: CohereProvider) -> None:
    huge = "word " * 210_000
    with pytest.raises(errors.ContextLengthExceeded) as caught:
        await adapter.chat(ChatRequest(model=MODEL, messages=user(huge)))
    assert caught.value.max_tokens == 256_000
    assert caught.value.requested_tokens is not None
    assert caught.value.requested_tokens > 256_000
