"""The Mistral simulator end to end: the official `mistralai` SDK and our adapter against it.

The SDK is synchronous here (its async flavour runs on asyncio), so each call runs in a
worker thread while the simulator (`conftest`'s `sim`) serves on the test's trio loop.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest
import trio
from mistralai.client import Mistral
from mistralai.client.errors import HTTPValidationError, SDKError

from providers import errors
from providers.adapters import build_adapter
from providers.base import ProviderEndpoint
from providers.mistral import MistralProvider
from providers.sim.core import Fault
from providers.sim.server import SimServer
from providers.types import ChatChunk, ChatRequest, EmbeddingRequest

T = TypeVar("T")
MODEL = "mistral-small-latest"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
            "required": ["city", "unit"],
        },
    },
}
HELLO = [{"role": "user", "content": "Say hello"}]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield http


@pytest.fixture
def adapter(sim: SimServer, client: httpx.AsyncClient) -> MistralProvider:
    endpoint = ProviderEndpoint("mistral", sim.base_url("mistral"), "sk-test")
    provider = build_adapter(client, endpoint)
    assert isinstance(provider, MistralProvider)
    return provider


@pytest.fixture
def sdk(sim: SimServer) -> Iterator[Mistral]:
    """The official client, its connection pool closed after the test."""
    with Mistral(api_key="sk-test", server_url=sim.base_url("mistral")) as client:
        yield client


async def in_thread(call: Callable[[], T]) -> T:
    with trio.fail_after(10):
        return await trio.to_thread.run_sync(call)


# -- the official SDK ----------------------------------------------------------------------


async def test_sdk_chat_complete(sim: SimServer, sdk: Mistral) -> None:
    client = sdk
    answer = await in_thread(lambda: client.chat.complete(model=MODEL, messages=HELLO))
    choice = answer.choices[0]
    assert isinstance(choice.message.content, str) and choice.message.content
    assert choice.finish_reason == "stop"
    assert answer.usage.prompt_tokens and answer.usage.completion_tokens
    assert answer.model == MODEL


async def test_sdk_chat_stream(sim: SimServer, sdk: Mistral) -> None:
    client = sdk

    def run() -> tuple[str, list[Any]]:
        events = list(client.chat.stream(model=MODEL, messages=HELLO, max_tokens=7))
        text = "".join(str(e.data.choices[0].delta.content or "") for e in events)
        return text, events

    text, events = await in_thread(run)
    whole = await in_thread(lambda: client.chat.complete(model=MODEL, messages=HELLO, max_tokens=7))
    assert text == whole.choices[0].message.content
    last = events[-1].data
    assert last.choices[0].finish_reason == "length"
    assert last.usage is not None and last.usage.completion_tokens == 7


async def test_sdk_tool_call(sim: SimServer, sdk: Mistral) -> None:
    client = sdk
    answer = await in_thread(
        lambda: client.chat.complete(
            model=MODEL,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=[WEATHER],
            tool_choice="any",
        )
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    call = calls[0]
    assert call.function.name == "get_weather"
    assert len(call.id or "") == 9 and (call.id or "").isalnum()
    assert json.loads(str(call.function.arguments))["unit"] == "c"


async def test_sdk_embeddings(sim: SimServer, sdk: Mistral) -> None:
    client = sdk
    answer = await in_thread(
        lambda: client.embeddings.create(model="mistral-embed", inputs=["a cat", "a dog"])
    )
    assert [len(item.embedding or []) for item in answer.data] == [1024, 1024]
    assert [item.index for item in answer.data] == [0, 1]
    assert answer.usage.prompt_tokens == 4


async def test_sdk_models_list(sdk: Mistral) -> None:
    listing = await in_thread(lambda: sdk.models.list())
    assert MODEL in [card.id for card in listing.data or []]


async def test_sdk_rate_limit_surfaces_as_sdk_error(sim: SimServer, sdk: Mistral) -> None:
    sim.faults.add(Fault(model=MODEL, status=429, remaining=1))
    client = sdk
    with pytest.raises(SDKError) as caught:
        await in_thread(lambda: client.chat.complete(model=MODEL, messages=HELLO))
    assert caught.value.status_code == 429
    assert "Rate limit exceeded" in caught.value.body


async def test_sdk_validation_fault_is_http_validation_error(sim: SimServer, sdk: Mistral) -> None:
    sim.faults.add(Fault(model=MODEL, status=422, message="Input should be valid", remaining=1))
    client = sdk
    with pytest.raises(HTTPValidationError) as caught:
        await in_thread(lambda: client.chat.complete(model=MODEL, messages=HELLO))
    assert caught.value.data.detail
    assert caught.value.data.detail[0].msg == "Input should be valid"


async def test_sdk_unknown_model_is_sdk_error(sim: SimServer, sdk: Mistral) -> None:
    client = sdk
    with pytest.raises(SDKError) as caught:
        await in_thread(lambda: client.chat.complete(model="unknown-x", messages=HELLO))
    assert caught.value.status_code == 400
    assert json.loads(caught.value.body)["type"] == "invalid_model"


# -- our adapter over a real httpx client --------------------------------------------------


async def test_adapter_chat(adapter: MistralProvider) -> None:
    result = await adapter.chat(ChatRequest(model=MODEL, messages=HELLO, seed=3, user="u"))
    assert result.content and result.finish_reason == "stop"
    assert result.usage.completion_tokens > 0
    assert result.model == MODEL


async def collect(adapter: MistralProvider, request: ChatRequest) -> list[ChatChunk]:
    async with adapter.chat_stream(request) as chunks:
        return [chunk async for chunk in chunks]


async def test_adapter_stream_matches_whole_answer(adapter: MistralProvider) -> None:
    request = ChatRequest(model=MODEL, messages=HELLO, max_tokens=5)
    chunks = await collect(adapter, request)
    whole = await adapter.chat(request)
    assert "".join(c.content or "" for c in chunks) == whole.content
    assert chunks[-1].finish_reason == "length"
    assert chunks[-1].usage == whole.usage


async def test_adapter_tool_call_roundtrip(adapter: MistralProvider) -> None:
    ask = {"role": "user", "content": "Weather in Paris?"}
    request = ChatRequest(model=MODEL, messages=[ask], tools=[WEATHER], tool_choice="required")
    result = await adapter.chat(request)
    assert result.finish_reason == "tool_calls"
    (call,) = result.tool_calls
    chunks = await collect(adapter, request)
    streamed = [delta for chunk in chunks for delta in chunk.tool_calls]
    assert [(d.index, d.id, d.name, d.arguments) for d in streamed] == [
        (0, call.id, call.name, call.arguments)
    ]
    # The conversation continues with an OpenAI-style id; it is remapped, and answered.
    follow = ChatRequest(
        model=MODEL,
        messages=[
            ask,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_0123456789abcdef",
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_0123456789abcdef", "content": "21C"},
        ],
        tools=[WEATHER],
    )
    answer = await adapter.chat(follow)
    assert answer.finish_reason == "stop" and answer.content


async def test_adapter_embed(adapter: MistralProvider) -> None:
    result = await adapter.embed(EmbeddingRequest(model="mistral-embed", inputs=["x", "y"]))
    assert [len(v) for v in result.vectors] == [1024, 1024]
    assert result.vectors[0] != result.vectors[1]
    short = await adapter.embed(
        EmbeddingRequest(model="codestral-embed", inputs=["x"], dimensions=256)
    )
    assert len(short.vectors[0]) == 256


async def test_adapter_list_models(adapter: MistralProvider) -> None:
    assert "mistral-embed" in await adapter.list_models()


@pytest.mark.parametrize(
    ("fault", "cls"),
    [
        (Fault(model=MODEL, status=429), errors.ModelOverloaded),
        (Fault(model=MODEL, status=401), errors.AuthenticationFailed),
        (Fault(model=MODEL, status=422), errors.InvalidUpstreamRequest),
        (Fault(model=MODEL, status=500), errors.UpstreamHTTPError),
        (Fault(model=MODEL, status=503), errors.UpstreamUnavailable),
    ],
)
async def test_adapter_maps_faults(
    sim: SimServer, adapter: MistralProvider, fault: Fault, cls: type[errors.ProviderError]
) -> None:
    sim.faults.add(fault)
    with pytest.raises(cls):
        await adapter.chat(ChatRequest(model=MODEL, messages=HELLO))
    with pytest.raises(cls):
        await collect(adapter, ChatRequest(model=MODEL, messages=HELLO))


async def test_adapter_unknown_model(adapter: MistralProvider) -> None:
    with pytest.raises(errors.ModelNotFound) as caught:
        await adapter.chat(ChatRequest(model="unknown-model", messages=HELLO))
    assert caught.value.model == "unknown-model"


async def test_adapter_mid_stream_cut_is_interrupted(
    sim: SimServer, adapter: MistralProvider
) -> None:
    sim.faults.add(Fault(model=MODEL, stop_after_chunks=2))
    received: list[ChatChunk] = []
    with trio.fail_after(5), pytest.raises(errors.StreamInterrupted):
        async with adapter.chat_stream(ChatRequest(model=MODEL, messages=HELLO)) as chunks:
            async for chunk in chunks:
                received.append(chunk)
    assert received and all(c.finish_reason is None for c in received)
    assert sim.stats.connections_cut == 1


async def test_sim_refuses_foreign_tool_call_ids(sim: SimServer, client: httpx.AsyncClient) -> None:
    """What the adapter's id remapping protects against."""
    body = {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_0123456789abcdef", "content": "21C"},
        ],
    }
    answer = await client.post(
        sim.base_url("mistral") + "/v1/chat/completions",
        json=body,
        headers={"authorization": "Bearer sk-test"},
    )
    assert answer.status_code == 400
    assert answer.json()["object"] == "error"
    extra = await client.post(
        sim.base_url("mistral") + "/v1/chat/completions",
        json={**body, "messages": body["messages"][:1], "user": "u"},
        headers={"authorization": "Bearer sk-test"},
    )
    assert extra.status_code == 422
    assert extra.json()["detail"][0]["loc"] == ["body", "user"]
