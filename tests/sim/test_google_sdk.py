"""The Gemini simulator end to end: the official google-genai SDK and our GoogleProvider,
both over real HTTP to a simulator on 127.0.0.1.

The SDK's synchronous client runs in a worker thread (it is not trio-aware); every test
is bounded by `trio.fail_after` so that nothing can hang.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import attrs
import httpx
import pytest
import trio
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from providers.base import ProviderEndpoint
from providers.errors import (
    AuthenticationFailed,
    ContentFiltered,
    ContextLengthExceeded,
    ModelNotFound,
    ModelOverloaded,
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.google import GoogleProvider, estimate_tokens
from providers.sim.core import Fault
from providers.sim.server import SimConfig, SimServer, serve_simulator
from providers.types import ChatChunk, ChatRequest, EmbeddingRequest, ToolCallDelta

MODEL = "gemini-2.5-flash"
DEADLINE = 10
T = TypeVar("T")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
async def sim(nursery: trio.Nursery) -> SimServer:
    server: SimServer = await nursery.start(serve_simulator, "127.0.0.1", 0, SimConfig())
    return server


@pytest.fixture
async def provider(sim: SimServer) -> AsyncIterator[GoogleProvider]:
    async with httpx.AsyncClient() as client:
        endpoint = ProviderEndpoint("google", sim.base_url("google"), "test-key")
        yield GoogleProvider(client, endpoint)


async def in_thread(fn: Callable[[], T]) -> T:
    """Run blocking SDK code off the event loop, under the test's deadline."""
    with trio.fail_after(DEADLINE):
        return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


def sdk_client(sim: SimServer, api_key: str = "test-key") -> genai.Client:
    options = types.HttpOptions(base_url=sim.base_url("google"), timeout=DEADLINE * 1000)
    return genai.Client(api_key=api_key, http_options=options)


# -- the official SDK ----------------------------------------------------------------------


async def test_sdk_generate_content(sim: SimServer) -> None:
    def call() -> types.GenerateContentResponse:
        with sdk_client(sim) as client:
            return client.models.generate_content(
                model=MODEL,
                contents="Tell me about rivers",
                config=types.GenerateContentConfig(system_instruction="Be brief."),
            )

    response = await in_thread(call)
    assert response.text
    assert response.candidates
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.usage_metadata is not None
    assert response.usage_metadata.candidates_token_count == len(response.text.split())


async def test_sdk_generate_content_stream(sim: SimServer) -> None:
    def call() -> list[types.GenerateContentResponse]:
        with sdk_client(sim) as client:
            stream = client.models.generate_content_stream(
                model=MODEL,
                contents="Tell me about rivers",
                config=types.GenerateContentConfig(max_output_tokens=6),
            )
            return list(stream)

    events = await in_thread(call)
    assert len(events) == 6
    assert events[-1].candidates
    assert events[-1].candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert "".join(event.text or "" for event in events).count(" ") == 5


async def test_sdk_function_calling(sim: SimServer) -> None:
    declaration = types.FunctionDeclaration(
        name="get_weather",
        description="Weather in a city",
        parameters=types.Schema(
            type=types.Type.OBJECT,
            properties={"city": types.Schema(type=types.Type.STRING)},
            required=["city"],
        ),
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[declaration])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )

    def call() -> tuple[types.GenerateContentResponse, types.GenerateContentResponse]:
        with sdk_client(sim) as client:
            first = client.models.generate_content(
                model=MODEL, contents="Weather in Paris?", config=config
            )
            assert first.function_calls
            call = first.function_calls[0]
            history = [
                types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]),
                types.Content(role="model", parts=[types.Part(function_call=call)]),
                types.Content(
                    role="user",
                    parts=[
                        types.Part.from_function_response(
                            name=call.name or "", response={"result": {"temp": 21}}
                        )
                    ],
                ),
            ]
            second = client.models.generate_content(model=MODEL, contents=history, config=config)
            return first, second

    first, second = await in_thread(call)
    assert first.function_calls is not None
    assert first.function_calls[0].name == "get_weather"
    assert isinstance(first.function_calls[0].args, dict)
    assert isinstance(first.function_calls[0].args["city"], str)
    assert not second.function_calls
    assert second.text


async def test_sdk_embed_content(sim: SimServer) -> None:
    def call() -> types.EmbedContentResponse:
        with sdk_client(sim) as client:
            return client.models.embed_content(
                model="gemini-embedding-001",
                contents=["first text", "second text"],
                config=types.EmbedContentConfig(output_dimensionality=16),
            )

    response = await in_thread(call)
    assert response.embeddings is not None
    assert [len(e.values or ()) for e in response.embeddings] == [16, 16]


async def test_sdk_list_models(sim: SimServer) -> None:
    def call() -> list[str]:
        with sdk_client(sim) as client:
            return [model.name or "" for model in client.models.list()]

    names = await in_thread(call)
    assert f"models/{MODEL}" in names


async def test_sdk_safety_block(sim: SimServer) -> None:
    sim.faults.add(Fault(model=MODEL, vendor="google", code="safety", remaining=1))

    def call() -> types.GenerateContentResponse:
        with sdk_client(sim) as client:
            return client.models.generate_content(model=MODEL, contents="Hi")

    response = await in_thread(call)
    assert response.candidates
    assert response.candidates[0].finish_reason == types.FinishReason.SAFETY
    assert response.candidates[0].content is None


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, genai_errors.ClientError),
        (429, genai_errors.ClientError),
        (503, genai_errors.ServerError),
    ],
)
async def test_sdk_errors(
    sim: SimServer, status: int, error_class: type[genai_errors.APIError]
) -> None:
    sim.faults.add(Fault(model=MODEL, vendor="google", status=status, remaining=1))

    def call() -> None:
        with sdk_client(sim) as client:
            client.models.generate_content(model=MODEL, contents="Hi")

    with pytest.raises(error_class) as caught:
        await in_thread(call)
    assert caught.value.code == status
    assert caught.value.status


async def test_sdk_unknown_model_and_bad_key(sim: SimServer) -> None:
    def unknown() -> None:
        with sdk_client(sim) as client:
            client.models.generate_content(model="unknown-model", contents="Hi")

    def bad_key() -> None:
        with sdk_client(sim, api_key="invalid") as client:
            client.models.generate_content(model=MODEL, contents="Hi")

    with pytest.raises(genai_errors.ClientError) as caught:
        await in_thread(unknown)
    assert (caught.value.code, caught.value.status) == (404, "NOT_FOUND")
    with pytest.raises(genai_errors.ClientError) as caught:
        await in_thread(bad_key)
    assert (caught.value.code, caught.value.status) == (400, "INVALID_ARGUMENT")


# -- our adapter ---------------------------------------------------------------------------


def ask(text: str, **options: Any) -> ChatRequest:
    return ChatRequest(model=MODEL, messages=[{"role": "user", "content": text}], **options)


async def collect(provider: GoogleProvider, request: ChatRequest) -> list[ChatChunk]:
    with trio.fail_after(DEADLINE):
        async with provider.chat_stream(request) as chunks:
            return [chunk async for chunk in chunks]


async def test_provider_chat(provider: GoogleProvider) -> None:
    with trio.fail_after(DEADLINE):
        result = await provider.chat(ask("Tell me about rivers", max_tokens=5))
    assert result.content is not None
    assert len(result.content.split()) == 5
    assert result.finish_reason == "length"
    assert result.usage.completion_tokens == 5
    assert result.usage.prompt_tokens > 0
    assert result.id


async def test_provider_chat_stream_matches_chat(provider: GoogleProvider) -> None:
    request = ask("Tell me about rivers")
    with trio.fail_after(DEADLINE):
        whole = await provider.chat(request)
    chunks = await collect(provider, request)
    assert "".join(c.content or "" for c in chunks) == whole.content
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].usage == whole.usage
    assert all(c.finish_reason is None for c in chunks[:-1])


async def test_provider_tool_calls(provider: GoogleProvider) -> None:
    request = ask("Weather in Paris?", tools=[WEATHER], tool_choice="auto")
    with trio.fail_after(DEADLINE):
        result = await provider.chat(request)
    assert result.finish_reason == "tool_calls"
    (call,) = result.tool_calls
    assert (call.id, call.name) == ("call_0", "get_weather")
    assert set(json.loads(call.arguments)) == {"city"}
    chunks = await collect(provider, request)
    assert chunks == [
        ChatChunk(tool_calls=(ToolCallDelta(0, "call_0", "get_weather", call.arguments),)),
        ChatChunk(finish_reason="tool_calls", usage=result.usage),
    ]
    answered = ChatRequest(
        model=MODEL,
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
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
            {"role": "tool", "tool_call_id": call.id, "content": '{"temp": 21}'},
        ],
        tools=[WEATHER],
    )
    with trio.fail_after(DEADLINE):
        final = await provider.chat(answered)
    assert (final.finish_reason, final.tool_calls) == ("stop", ())
    assert final.content


async def test_provider_embed_and_models(provider: GoogleProvider) -> None:
    request = EmbeddingRequest(model="gemini-embedding-001", inputs=["a", "bb"], dimensions=8)
    with trio.fail_after(DEADLINE):
        result = await provider.embed(request)
        models = await provider.list_models()
    assert [len(v) for v in result.vectors] == [8, 8]
    assert result.vectors[0] != result.vectors[1]
    assert result.usage.prompt_tokens == 2
    assert MODEL in models


async def test_provider_embeds_more_than_one_batch(
    sim: SimServer, provider: GoogleProvider
) -> None:
    """250 inputs go as calls of 100, 100 and 50 (the API refuses more than 100), one
    after the other; vectors keep input order and usage is the sum of the batches'."""
    texts = [f"text number {n}" for n in range(250)]
    request = EmbeddingRequest(model="gemini-embedding-001", inputs=texts, dimensions=8)
    with trio.fail_after(DEADLINE):
        whole = await provider.embed(request)
        alone = [
            await provider.embed(attrs.evolve(request, inputs=[text]))
            for text in (texts[0], texts[100], texts[249])
        ]
    path = "/google/v1beta/models/{model}:batchEmbedContents"
    assert sim.stats.by_path[path] == 3 + 3
    assert len(whole.vectors) == 250
    assert [whole.vectors[n] for n in (0, 100, 249)] == [r.vectors[0] for r in alone]
    assert whole.usage.prompt_tokens == estimate_tokens(texts)


async def test_a_failed_batch_fails_the_embedding(sim: SimServer, provider: GoogleProvider) -> None:
    request = EmbeddingRequest(model="gemini-embedding-001", inputs=["x"] * 150)
    sim.faults.add(Fault(model="gemini-embedding-001", status=429, remaining=1))
    with trio.fail_after(DEADLINE), pytest.raises(ModelOverloaded):
        await provider.embed(request)


@pytest.mark.parametrize(
    ("fault", "error_class"),
    [
        (Fault(model=MODEL, status=400), ProviderError),
        (Fault(model=MODEL, status=400, code="context_length_exceeded"), ContextLengthExceeded),
        (Fault(model=MODEL, status=403), AuthenticationFailed),
        (Fault(model=MODEL, status=429), ModelOverloaded),
        (Fault(model=MODEL, status=500), UpstreamHTTPError),
        (Fault(model=MODEL, status=503), UpstreamUnavailable),
        (Fault(model=MODEL, status=504), UpstreamTimeout),
    ],
)
async def test_provider_mapped_errors(
    sim: SimServer, provider: GoogleProvider, fault: Fault, error_class: type[ProviderError]
) -> None:
    sim.faults.add(fault)
    with trio.fail_after(DEADLINE), pytest.raises(error_class):
        await provider.chat(ask("Hi"))
    with pytest.raises(error_class):
        await collect(provider, ask("Hi"))


async def test_provider_unknown_model_and_bad_key(sim: SimServer, provider: GoogleProvider) -> None:
    with trio.fail_after(DEADLINE), pytest.raises(ModelNotFound):
        await provider.chat(
            ChatRequest(model="unknown-x", messages=[{"role": "user", "content": "a"}])
        )
    endpoint = ProviderEndpoint("google", sim.base_url("google"), "invalid")
    bad = GoogleProvider(provider.client, endpoint)
    with trio.fail_after(DEADLINE), pytest.raises(AuthenticationFailed):
        await bad.chat(ask("Hi"))


async def test_provider_safety_block(sim: SimServer, provider: GoogleProvider) -> None:
    sim.faults.add(Fault(model=MODEL, code="safety", remaining=2))
    with trio.fail_after(DEADLINE):
        result = await provider.chat(ask("Hi"))
    assert (result.content, result.finish_reason) == (None, "content_filter")
    chunks = await collect(provider, ask("Hi"))
    assert [c.finish_reason for c in chunks] == ["content_filter"]


async def test_provider_blocked_prompt(sim: SimServer, provider: GoogleProvider) -> None:
    sim.faults.add(Fault(model=MODEL, code="prompt_blocked", remaining=2))
    with trio.fail_after(DEADLINE), pytest.raises(ContentFiltered) as caught:
        await provider.chat(ask("Hi"))
    assert caught.value.filter_reason == "SAFETY"
    with pytest.raises(ContentFiltered):
        await collect(provider, ask("Hi"))


async def test_provider_stream_cut(sim: SimServer, provider: GoogleProvider) -> None:
    sim.faults.add(Fault(model=MODEL, stop_after_chunks=3))
    received: list[ChatChunk] = []
    with trio.fail_after(DEADLINE), pytest.raises(StreamInterrupted):
        async with provider.chat_stream(ask("Tell me about rivers")) as chunks:
            async for chunk in chunks:
                received.append(chunk)
    assert len(received) == 3
    assert all(c.finish_reason is None for c in received)


async def test_json_array_stream_form(sim: SimServer) -> None:
    url = sim.base_url("google") + f"/v1beta/models/{MODEL}:streamGenerateContent?key=k"
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    with trio.fail_after(DEADLINE):
        async with httpx.AsyncClient() as client:
            response = await client.post(url, json=body)
    events = response.json()
    assert isinstance(events, list)
    assert events[-1]["candidates"][0]["finishReason"] == "STOP"
    assert "".join(e["candidates"][0]["content"]["parts"][0]["text"] for e in events)
