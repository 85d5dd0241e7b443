"""Cohere's chat through the gateway with the official `openai` client, and routing that
never picks a model no configured adapter can serve (issue 22, item 1)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.upstream import resolve
from gateway.upstream.resolve import RoutingSignals, adapter_serves, resolve_chat_target
from providers.adapters import ADAPTER_CLASSES
from providers.base import Provider
from providers.catalog import load_catalog
from providers.cohere import CohereProvider
from tests.gateway.conftest import ADMIN_KEY

MODEL = "command-a-03-2025"
HELLO: Any = [{"role": "user", "content": "Hello there"}]
WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ALL = frozenset(ADAPTER_CLASSES)


async def test_command_a_answers_plain(client: openai.AsyncOpenAI) -> None:
    raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=HELLO)
    answer = raw.parse()
    assert answer.model == MODEL
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content
    assert answer.usage is not None and answer.usage.completion_tokens > 0
    assert raw.headers["x-service-model-used"] == f"cohere/{MODEL}"
    assert raw.http_response.json()["service"]["cost"]["total"] > 0


async def test_command_a_streams(client: openai.AsyncOpenAI) -> None:
    whole = await client.chat.completions.create(model=MODEL, messages=HELLO)
    stream = await client.chat.completions.create(
        model=MODEL, messages=HELLO, stream=True, stream_options={"include_usage": True}
    )
    text, finish, usage = "", None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text == whole.choices[0].message.content
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens == whole.usage.completion_tokens  # type: ignore[union-attr]


async def test_command_a_calls_tools_plain_and_streamed(client: openai.AsyncOpenAI) -> None:
    asked: Any = [{"role": "user", "content": "Weather in Paris?"}]
    answer = await client.chat.completions.create(model=MODEL, messages=asked, tools=[WEATHER_TOOL])
    calls = answer.choices[0].message.tool_calls or []
    assert answer.choices[0].finish_reason == "tool_calls"
    assert [call.function.name for call in calls] == ["get_weather"]  # type: ignore[union-attr]
    stream = await client.chat.completions.create(
        model=MODEL, messages=asked, tools=[WEATHER_TOOL], stream=True
    )
    arguments, finish = "", None
    async for chunk in stream:
        for choice in chunk.choices:
            for piece in choice.delta.tool_calls or ():
                arguments += piece.function.arguments or ""  # type: ignore[union-attr]
            finish = choice.finish_reason or finish
    assert finish == "tool_calls"
    assert json.loads(arguments) == json.loads(calls[0].function.arguments)  # type: ignore[union-attr]


def observe_cohere_fastest(gateway: RunningGateway) -> None:
    """What a user saw: Cohere served rerank and embeddings quickly, so its observed
    latency is the lowest and `low_latency` routes chat to its model."""
    record = gateway.state.keyring.lookup(ADMIN_KEY)
    assert record is not None
    for provider_id in gateway.state.registry.active_ids(record.workspace_id):
        latency = 5.0 if provider_id == "cohere" else 900.0
        gateway.state.health.record(record.workspace_id, provider_id, ok=True, latency_ms=latency)


@pytest.mark.parametrize("where", ["body", "header"])
async def test_auto_low_latency_is_served_by_the_fastest_provider(
    gateway: RunningGateway, client: openai.AsyncOpenAI, where: str
) -> None:
    observe_cohere_fastest(gateway)
    if where == "body":
        extra: Any = {"extra_body": {"routing_mode": "low_latency"}}
    else:
        extra = {"extra_headers": {"X-Routing-Mode": "low_latency"}}
    raw = await client.chat.completions.with_raw_response.create(
        model="auto", messages=HELLO, **extra
    )
    body = raw.http_response.json()
    assert body["choices"][0]["message"]["content"]
    assert body["_gateway"]["routing"]["mode"] == "low_latency"
    assert raw.headers["x-service-model-used"].startswith("cohere/")


# -- routing only to adapters that serve the operation (pure) ------------------------------


class RerankOnlyCohere(CohereProvider):
    """Cohere as it was before chat: the base class's chat, which is `Unsupported`."""

    chat = Provider.chat
    chat_stream = Provider.chat_stream  # type: ignore[assignment]


@pytest.fixture
def cohere_without_chat(monkeypatch: pytest.MonkeyPatch) -> None:
    classes = {**ADAPTER_CLASSES, "cohere": RerankOnlyCohere}
    monkeypatch.setattr(resolve, "ADAPTER_CLASSES", classes)


def test_adapter_serves_reads_the_adapter_class() -> None:
    assert adapter_serves("cohere", "chat")
    assert adapter_serves("cohere", "rerank")
    assert not adapter_serves("elevenlabs", "chat")
    assert not adapter_serves("anthropic", "embeddings")
    assert not adapter_serves("no-such-vendor", "chat")


@pytest.mark.usefixtures("cohere_without_chat")
@pytest.mark.parametrize(
    "mode", ["balanced", "performance", "cost_optimized", "low_latency", "sustain_optimized"]
)
def test_auto_never_picks_a_provider_whose_adapter_cannot_chat(mode: str) -> None:
    fastest = RoutingSignals(observed_latency_ms=lambda p: 5.0 if p == "cohere" else 900.0)
    resolution = resolve_chat_target(
        load_catalog(), ALL, model="auto", provider=None, mode=mode, signals=fastest
    )
    chosen = [resolution.target, *resolution.alternatives]
    assert all(target.provider_id != "cohere" for target in chosen)


@pytest.mark.usefixtures("cohere_without_chat")
def test_a_named_model_its_adapter_cannot_serve_takes_its_fallback_chain() -> None:
    catalog = load_catalog()
    resolution = resolve_chat_target(catalog, ALL, model=MODEL, provider=None, mode="balanced")
    info = catalog.model(MODEL)
    assert info is not None
    assert resolution.target.model_id == info.fallback_chain[0]
    assert [t.model_id for t in resolution.alternatives] == list(info.fallback_chain[1:])
