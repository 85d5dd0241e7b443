"""Planning refuses what no upstream would serve, and serves what a fallback can (issue 22,
items 2 to 4): `max_tokens` and the context window checked against the catalog, a
disabled provider's models falling back, a forced provider that does not serve the model.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from gateway.chat.model_fit import IMAGE_TOKENS, fits, fitted, prompt_tokens
from gateway.platform.errors import ApiError
from gateway.upstream.resolve import Resolution, target_of
from providers.catalog import load_catalog

HELLO: Any = [{"role": "user", "content": "Hello there"}]
PROVIDERS = "/v1/management/providers"


def error_of(caught: pytest.ExceptionInfo[openai.APIStatusError]) -> dict[str, Any]:
    body = caught.value.response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    return error


# -- item 2: max_tokens and the context window ---------------------------------------------


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
async def test_max_tokens_above_the_models_output_limit_is_a_400(
    client: openai.AsyncOpenAI, field: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, extra_body={field: 100_000}
        )
    error = error_of(caught)
    assert error["code"] == "invalid_request"
    assert error["param"] == "max_tokens"
    assert error["value"] == 100_000
    assert "16384" in error["message"]


async def test_max_tokens_at_the_limit_is_served(client: openai.AsyncOpenAI) -> None:
    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, max_tokens=16_384
    )
    assert answer.choices[0].message.content


async def test_a_prompt_over_the_context_window_is_context_length_exceeded(
    client: openai.AsyncOpenAI,
) -> None:
    huge: Any = [{"role": "user", "content": "word " * 110_000}]  # ~137,500 tokens
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=huge)
    error = error_of(caught)
    assert error["code"] == "context_length_exceeded"
    assert error["model"] == "gpt-4o-mini"
    assert error["provider"] == "openai"
    assert error["max_tokens"] == 128_000
    assert error["requested_tokens"] > 128_000


async def test_prompt_plus_max_tokens_over_the_window_is_context_length_exceeded(
    client: openai.AsyncOpenAI,
) -> None:
    long: Any = [{"role": "user", "content": "word " * 96_000}]  # ~120,000 tokens
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=long)
    assert answer.choices[0].message.content
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=long, max_tokens=16_000)
    error = error_of(caught)
    assert error["code"] == "context_length_exceeded"
    assert error["requested_tokens"] > 128_000


def _resolution(*models: str) -> Resolution:
    catalog = load_catalog()
    targets = [target_of(info) for m in models if (info := catalog.model(m)) is not None]
    return Resolution(targets[0], tuple(targets[1:]), "balanced", "test")


def test_fallbacks_that_cannot_take_the_request_leave_the_chain() -> None:
    resolution = fitted(
        _resolution("gpt-4.1", "gpt-4o-mini", "claude-haiku-4-5"),
        prompt=10,
        max_tokens=20_000,
        flexible=False,
    )
    assert resolution.target.model_id == "gpt-4.1"
    assert [t.model_id for t in resolution.alternatives] == ["claude-haiku-4-5"]


def test_auto_takes_the_first_candidate_that_fits() -> None:
    resolution = fitted(
        _resolution("gpt-4o-mini", "gpt-4o", "claude-haiku-4-5"),
        prompt=10,
        max_tokens=20_000,
        flexible=True,
    )
    assert resolution.target.model_id == "claude-haiku-4-5"
    assert resolution.alternatives == ()
    with pytest.raises(ApiError) as caught:
        fitted(_resolution("gpt-4o-mini"), prompt=10, max_tokens=20_000, flexible=True)
    assert caught.value.code == "invalid_request"


def test_an_image_counts_as_an_allowance_not_as_its_bytes() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 10**6}}
    message = {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}
    estimate = prompt_tokens([message], None)
    assert IMAGE_TOKENS < estimate < IMAGE_TOKENS + 20
    assert fits(load_catalog().model("gpt-4o-mini"), estimate, None)


# -- item 3: a disabled provider -----------------------------------------------------------


async def test_a_disabled_providers_model_falls_back_then_is_unavailable(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    assert (await http.post(f"{PROVIDERS}/openai/disable")).status_code == 200
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO
    )
    body = raw.http_response.json()
    assert body["service"]["provider"] != "openai"
    assert body["_gateway"]["fallback"]["fallback_model"] == "gemini-2.5-flash-lite"
    for provider in ("google", "anthropic", "mistral"):  # the rest of gpt-4o-mini's chain
        assert (await http.post(f"{PROVIDERS}/{provider}/disable")).status_code == 200
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, stream=stream)
        assert caught.value.status_code == 503
        error = error_of(caught)
        assert error["code"] == "provider_unavailable"
        assert error["provider"] == "openai"


# -- item 4: a forced provider that does not serve the model -------------------------------


async def test_forcing_a_provider_that_does_not_serve_the_model_is_a_400(
    client: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, extra_body={"provider": "anthropic"}
        )
    error = error_of(caught)
    assert error["code"] == "invalid_request"
    assert error["param"] == "provider"
    assert "'gpt-4o-mini'" in error["message"]
    assert "'openai'" in error["message"] and "'anthropic'" in error["message"]


async def test_forcing_the_models_own_provider_is_served_and_priced(
    client: openai.AsyncOpenAI,
) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model="claude-haiku-4-5", messages=HELLO, extra_body={"provider": "anthropic"}
    )
    body = raw.http_response.json()
    assert body["service"]["provider"] == "anthropic"
    assert body["service"]["cost"]["total"] > 0


IMAGE_MESSAGE: Any = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "https://images.example/cat.png"}},
        ],
    }
]


@pytest.mark.parametrize("mode", ["balanced", "cost_optimized", "low_latency", "sustain_optimized"])
async def test_auto_routes_an_image_only_to_a_model_that_can_see(
    client: openai.AsyncOpenAI, mode: str
) -> None:
    """`sustain_optimized` chose codestral-latest, which reads no images."""
    raw = await client.chat.completions.with_raw_response.create(
        model="auto", messages=IMAGE_MESSAGE, extra_body={"routing_mode": mode}
    )
    served = raw.headers["x-service-model-used"].split("/", 1)[1]
    info = load_catalog().model(served)
    assert info is not None and "vision" in info.capabilities, served
    fallback = (raw.parse().model_extra or {})["_gateway"]["alternatives"]
    for alternative in fallback:
        alt = load_catalog().model(alternative["model"])
        assert alt is not None and "vision" in alt.capabilities


async def test_an_image_for_a_model_that_cannot_see_is_a_400(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="magistral-medium-latest", messages=IMAGE_MESSAGE
        )
    error = error_of(caught)
    assert (error["code"], error["param"]) == ("invalid_request", "messages")
    assert "cannot read images" in error["message"]


JSON_OBJECT: Any = {"type": "json_object"}


def _has_json_mode(model: str) -> bool:
    info = load_catalog().model(model)
    return info is not None and "json_mode" in info.capabilities


@pytest.mark.parametrize(
    "mode", ["balanced", "cost_optimized", "low_latency", "performance", "sustain_optimized"]
)
async def test_auto_routes_a_json_request_only_to_models_with_json_mode(
    client: openai.AsyncOpenAI, mode: str
) -> None:
    """Anthropic's models have no JSON mode (their adapter drops `response_format`):
    `auto` must not answer a JSON request in prose through one, nor fall back to one."""
    raw = await client.chat.completions.with_raw_response.create(
        model="auto",
        messages=HELLO,
        response_format=JSON_OBJECT,
        extra_body={"routing_mode": mode, "service": {"cache": "skip"}},
    )
    served = raw.headers["x-service-model-used"].split("/", 1)[1]
    assert _has_json_mode(served), served
    alternatives = (raw.parse().model_extra or {})["_gateway"]["alternatives"]
    assert all(_has_json_mode(a["model"]) for a in alternatives), alternatives


async def test_a_named_model_keeps_its_target_and_falls_back_only_to_json_mode(
    client: openai.AsyncOpenAI,
) -> None:
    for model in ("gpt-4o-mini", "claude-haiku-4-5"):
        raw = await client.chat.completions.with_raw_response.create(
            model=model,
            messages=HELLO,
            response_format=JSON_OBJECT,
            extra_body={"service": {"cache": "skip"}},
        )
        assert raw.headers["x-service-model-used"].endswith("/" + model)
        alternatives = (raw.parse().model_extra or {})["_gateway"]["alternatives"]
        assert all(_has_json_mode(a["model"]) for a in alternatives), (model, alternatives)
