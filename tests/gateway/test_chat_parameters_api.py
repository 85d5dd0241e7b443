"""Every chat parameter reaches the vendor in its wire form, or is refused by name.

Through the official `openai` client against the gateway in demo mode: the simulators
record the requests they receive (`SimServer.requests`), so each test reads what the
vendor was sent. Each vendor's simulator refuses the fields its vendor does not know, so
an OpenAI-only parameter leaking into another vendor's request would fail there too.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from gateway.app.server import RunningGateway
from providers.sim.core import Fault

HELLO: Any = [{"role": "user", "content": "Tell me about rivers."}]
SKIP: Any = {"cache": "skip"}
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def sent(gateway: RunningGateway, vendor: str) -> dict[str, Any]:
    """The body of the last request the `vendor` simulator received."""
    assert gateway.sim is not None
    bodies = [r.body for r in gateway.sim.requests if r.vendor == vendor]
    assert bodies, f"nothing reached {vendor}"
    body: dict[str, Any] = bodies[-1]
    return body


async def test_openai_receives_every_parameter_as_is(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    await client.chat.completions.create(
        model="gpt-4.1-mini",
        messages=HELLO,
        seed=7,
        logit_bias={"50256": -100},
        tools=[WEATHER],
        parallel_tool_calls=False,
        tool_choice="none",
        store=True,
        metadata={"team": "red"},
        service_tier="flex",
        user="user-1",
        safety_identifier="hash-1",
        prompt_cache_key="conversation-1",
        prompt_cache_retention="24h",
        prediction={"type": "content", "content": "Rivers flow."},
        max_completion_tokens=30,
        extra_body={"service": SKIP},
    )
    body = sent(gateway, "openai")
    expected = {
        "seed": 7,
        "logit_bias": {"50256": -100},
        "parallel_tool_calls": False,
        "store": True,
        "metadata": {"team": "red"},
        "service_tier": "flex",
        "user": "user-1",
        "safety_identifier": "hash-1",
        "prompt_cache_key": "conversation-1",
        "prompt_cache_retention": "24h",
        "prediction": {"type": "content", "content": "Rivers flow."},
        "max_completion_tokens": 30,
    }
    assert {k: body.get(k) for k in expected} == expected


async def test_a_reasoning_model_gets_its_effort_and_verbosity(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    await client.chat.completions.create(
        model="gpt-5.4-mini",
        messages=HELLO,
        reasoning_effort="high",
        verbosity="low",
        extra_body={"service": SKIP},
    )
    body = sent(gateway, "openai")
    assert (body["reasoning_effort"], body["verbosity"]) == ("high", "low")


async def test_anthropic_receives_the_translations(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    schema = {"type": "object", "properties": {"river": {"type": "string"}}}
    answer = await client.chat.completions.create(
        model="claude-haiku-4-5",
        messages=HELLO,
        reasoning_effort="low",
        stop=["END"],
        safety_identifier="hash-1",
        service_tier="default",
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
        extra_body={"service": SKIP},
    )
    body = sent(gateway, "anthropic")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 4096 + 1024
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert (body["stop_sequences"], body["metadata"], body["service_tier"]) == (
        ["END"],
        {"user_id": "hash-1"},
        "standard_only",
    )
    # The simulator thought first (a thinking block) and answered JSON of the schema.
    content = answer.choices[0].message.content
    assert content is not None and content.startswith("{") and "river" in content


async def test_gemini_receives_the_translations(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    answer = await client.chat.completions.create(
        model="gemini-2.5-flash",
        messages=HELLO,
        n=2,
        seed=3,
        logprobs=True,
        top_logprobs=2,
        reasoning_effort="none",
        service_tier="flex",
        store=False,
        metadata={"team": "red"},
        extra_body={"service": SKIP},
    )
    body = sent(gateway, "google")
    config = body["generationConfig"]
    assert (config["candidateCount"], config["seed"], config["responseLogprobs"]) == (2, 3, True)
    assert (config["logprobs"], config["thinkingConfig"]) == (2, {"thinkingBudget": 0})
    assert (body["serviceTier"], body["store"], body["labels"]) == ("flex", False, {"team": "red"})
    assert [c.index for c in answer.choices] == [0, 1]
    first = answer.choices[0]
    assert first.logprobs is not None and first.logprobs.content
    assert "".join(t.token for t in first.logprobs.content) == first.message.content
    assert all(len(t.top_logprobs) == 2 for t in first.logprobs.content)


async def test_mistral_receives_the_translations(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    await client.chat.completions.create(
        model="mistral-large-latest",
        messages=HELLO,
        n=2,
        seed=5,
        logprobs=True,
        prediction={"type": "content", "content": "Rivers flow."},
        metadata={"team": "red"},
        prompt_cache_key="conversation-1",
        service_tier="default",
        tools=[WEATHER],
        parallel_tool_calls=False,
        tool_choice="none",
        extra_body={"service": SKIP},
    )
    body = sent(gateway, "mistral")
    assert (body["n"], body["random_seed"], body["logprobs"]) == (2, 5, True)
    assert body["prediction"] == {"type": "content", "content": "Rivers flow."}
    assert (body["metadata"], body["prompt_cache_key"]) == ({"team": "red"}, "conversation-1")
    assert (body["service_tier"], body["parallel_tool_calls"]) == ("standard_only", False)
    assert "seed" not in body and "user" not in body


async def test_cohere_receives_the_translations(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    await client.chat.completions.create(
        model="command-a-reasoning-08-2025",
        messages=HELLO,
        top_p=1,
        seed=9,
        presence_penalty=0.5,
        reasoning_effort="medium",
        extra_body={"service": SKIP},
    )
    body = sent(gateway, "cohere")
    assert (body["p"], body["seed"], body["presence_penalty"]) == (0.99, 9, 0.5)
    assert body["thinking"] == {"type": "enabled", "token_budget": 8192}


@pytest.mark.parametrize("model", ["gpt-4.1-mini", "gemini-2.5-flash", "mistral-large-latest"])
@pytest.mark.parametrize("stream", [False, True])
async def test_n_answers_whole_and_streamed(
    client: openai.AsyncOpenAI, model: str, stream: bool
) -> None:
    if not stream:
        answer = await client.chat.completions.create(
            model=model, messages=HELLO, n=3, extra_body={"service": SKIP}
        )
        texts = {c.index: c.message.content for c in answer.choices}
        finishes = {c.index: c.finish_reason for c in answer.choices}
    else:
        texts, finishes = {}, {}
        chunks = await client.chat.completions.create(
            model=model, messages=HELLO, n=3, stream=True, extra_body={"service": SKIP}
        )
        async for chunk in chunks:
            for choice in chunk.choices:
                texts[choice.index] = (texts.get(choice.index) or "") + (choice.delta.content or "")
                if choice.finish_reason:
                    finishes[choice.index] = choice.finish_reason
    assert sorted(texts) == [0, 1, 2] and sorted(finishes) == [0, 1, 2]
    assert len(set(texts.values())) == 3, texts  # three answers, not one thrice
    assert all(texts.values())


@pytest.mark.parametrize("model", ["gpt-4.1-mini", "gemini-2.5-flash", "mistral-large-latest"])
async def test_streamed_log_probabilities_spell_the_text(
    client: openai.AsyncOpenAI, model: str
) -> None:
    text, tokens = "", []
    chunks = await client.chat.completions.create(
        model=model, messages=HELLO, logprobs=True, stream=True, extra_body={"service": SKIP}
    )
    async for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            if choice.logprobs and choice.logprobs.content:
                tokens += [t.token for t in choice.logprobs.content]
    assert text and "".join(tokens) == text


@pytest.mark.parametrize(
    ("model", "extra", "param"),
    [
        ("claude-haiku-4-5", {"n": 2}, "n"),
        ("claude-haiku-4-5", {"seed": 1}, "seed"),
        ("claude-haiku-4-5", {"logprobs": True}, "logprobs"),
        ("claude-haiku-4-5", {"temperature": 1.5}, "temperature"),
        ("command-a-03-2025", {"n": 2}, "n"),
        ("gemini-2.5-flash", {"logit_bias": {"1": 5}}, "logit_bias"),
        ("gpt-4.1-mini", {"reasoning_effort": "low"}, "reasoning_effort"),
        ("gpt-5.4-mini", {"reasoning_effort": "high", "temperature": 0.2}, "temperature"),
        ("o3", {"logprobs": True}, "logprobs"),
        ("gemini-2.5-pro", {"reasoning_effort": "none"}, "reasoning_effort"),
        (
            "gpt-4.1-mini",
            {"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}},
            "modalities",
        ),
    ],
)
async def test_a_parameter_the_model_cannot_honour_is_refused_by_name(
    client: openai.AsyncOpenAI, gateway: RunningGateway, model: str, extra: Any, param: str
) -> None:
    assert gateway.sim is not None
    before = len(gateway.sim.requests)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=model, messages=HELLO, extra_body=extra)
    body: Any = caught.value.body
    assert (body["code"], body["param"], body["model"]) == ("unsupported_parameter", param, model)
    assert body["value"] == extra[param]
    assert len(gateway.sim.requests) == before  # refused before any call


async def test_an_unknown_parameter_is_refused(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-5.4-mini", messages=HELLO, extra_body={"top_k": 5}
        )
    assert caught.value.body["param"] == "top_k"  # type: ignore[index]


async def test_a_fallback_that_cannot_honour_the_request_is_skipped(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    """gpt-4.1-mini falls back to gemini-2.5-flash, then claude-haiku-4-5; Claude takes
    no seed, so with a seed it leaves the chain: the answer comes from Gemini."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4.1-mini", status=500))
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4.1-mini", messages=HELLO, seed=1, extra_body={"service": SKIP}
    )
    assert raw.headers["x-service-model-used"] == "google/gemini-2.5-flash"
    alternatives = (raw.parse().model_extra or {})["_gateway"]["alternatives"]
    assert "claude-haiku-4-5" not in [a["model"] for a in alternatives]
    gateway.sim.faults.add(Fault(model="gemini-2.5-flash", status=500))
    with pytest.raises(openai.InternalServerError):  # nothing left that takes a seed
        await client.chat.completions.create(
            model="gpt-4.1-mini", messages=HELLO, seed=1, extra_body={"service": SKIP}
        )
    assert not [r for r in gateway.sim.requests if r.vendor == "anthropic"]


async def test_auto_picks_a_model_that_can_honour_the_request(
    client: openai.AsyncOpenAI,
) -> None:
    for mode in ("balanced", "cost_optimized", "performance", "sustain_optimized"):
        raw = await client.chat.completions.with_raw_response.create(
            model="auto", messages=HELLO, n=2, extra_body={"routing_mode": mode, "service": SKIP}
        )
        provider = raw.headers["x-service-model-used"].split("/")[0]
        assert provider in ("openai", "google", "mistral"), (mode, provider)
        assert len(raw.parse().choices) == 2


async def test_requests_that_differ_in_an_answer_parameter_never_share_a_cached_answer(
    client: openai.AsyncOpenAI,
) -> None:
    """The issue's case: answers for different `logit_bias` or `reasoning_effort` were
    served from each other's cache entry."""

    async def hit(**extra: Any) -> bool:
        answer = await client.chat.completions.create(model="gpt-5.4-mini", messages=HELLO, **extra)
        return bool((answer.model_extra or {})["service"]["cache"]["hit"])

    assert not await hit(reasoning_effort="low")
    assert not await hit(reasoning_effort="high")
    assert await hit(reasoning_effort="low")
    assert not await hit(reasoning_effort="none", logit_bias={"50256": -100})
    assert not await hit(reasoning_effort="none", logit_bias={"50256": 100})
    assert await hit(reasoning_effort="none", logit_bias={"50256": -100})
    # A parameter that cannot change the answer shares the entry.
    assert await hit(reasoning_effort="low", user="someone-else", store=True)


async def test_a_cached_answer_keeps_its_choices_and_log_probabilities(
    client: openai.AsyncOpenAI,
) -> None:
    ask: Any = {"model": "gpt-4.1-mini", "messages": HELLO, "n": 2, "logprobs": True}
    live = await client.chat.completions.create(**ask)
    cached = await client.chat.completions.create(**ask)
    assert (cached.model_extra or {})["service"]["cache"]["hit"]
    assert [c.message.content for c in cached.choices] == [c.message.content for c in live.choices]
    assert cached.choices[1].logprobs == live.choices[1].logprobs
    streamed: dict[int, str] = {}
    tokens: dict[int, list[str]] = {}
    async for chunk in await client.chat.completions.create(**ask, stream=True):
        for choice in chunk.choices:
            streamed[choice.index] = streamed.get(choice.index, "") + (choice.delta.content or "")
            if choice.logprobs and choice.logprobs.content:
                tokens.setdefault(choice.index, []).extend(t.token for t in choice.logprobs.content)
    assert streamed == {c.index: c.message.content for c in live.choices}
    assert {i: "".join(t) for i, t in tokens.items()} == streamed


async def test_obfuscation_pads_the_gateways_chunks(client: openai.AsyncOpenAI) -> None:
    chunks = await client.chat.completions.create(
        model="gpt-5.4-mini",
        messages=HELLO,
        stream=True,
        stream_options={"include_obfuscation": True},
        extra_body={"service": SKIP},
    )
    padded = []
    async for chunk in chunks:
        content = chunk.choices[0].delta.content if chunk.choices else None
        if content:
            pad = chunk.obfuscation or ""
            padded.append((len(content) + len(pad)) % 32 == 0 and len(pad) > 0)
    assert padded and all(padded)


@pytest.mark.parametrize("stream", [False, True])
async def test_moderation_results_reach_the_client(
    client: openai.AsyncOpenAI, gateway: RunningGateway, stream: bool
) -> None:
    ask: Any = {
        "model": "gpt-5.4-mini",
        "messages": HELLO,
        "extra_body": {"moderation": {"model": "omni-moderation-latest"}, "service": SKIP},
    }
    if not stream:
        answer = await client.chat.completions.create(**ask)
        moderation = answer.moderation
    else:
        moderation = None
        async for chunk in await client.chat.completions.create(**ask, stream=True):
            moderation = moderation or chunk.moderation
    assert sent(gateway, "openai")["moderation"] == {"model": "omni-moderation-latest"}
    assert moderation is not None and moderation.output is not None
    assert moderation.output.type == "moderation_results"
