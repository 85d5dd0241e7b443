"""Embeddings through the official `openai` client, for every embedding vendor.

Only `base_url` and `api_key` differ from talking to OpenAI itself; the simulators speak
OpenAI's, Gemini's, Mistral's and Cohere's own embedding protocols behind the gateway.
"""

from __future__ import annotations

import base64
import math
import struct
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog
from providers.sim.core import Fault
from store import usage

EMBEDDING_MODELS = [
    "text-embedding-3-small",
    "gemini-embedding-001",
    "mistral-embed",
    "embed-english-v3.0",
]
TEXTS = ["The cat sat on the mat.", "Trio nurseries own their tasks."]


def native_size(model: str) -> int:
    info = load_catalog().model(model)
    assert info is not None
    return info.limits["dimensions"]


def unpack(value: Any) -> list[float]:
    """OpenAI's base64 form: little-endian float32 (an explicit `base64` is left encoded)."""
    assert isinstance(value, str)
    raw = base64.b64decode(value)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


@pytest.mark.parametrize("model", EMBEDDING_MODELS)
async def test_float_and_base64_give_the_same_vectors(
    client: openai.AsyncOpenAI, model: str
) -> None:
    raw = await client.embeddings.with_raw_response.create(
        model=model, input=TEXTS, encoding_format="float"
    )
    floats = raw.parse()
    packed = await client.embeddings.create(model=model, input=TEXTS, encoding_format="base64")
    defaulted = await client.embeddings.create(model=model, input=TEXTS)  # base64, decoded

    assert floats.object == "list" and floats.model == model
    assert [d.index for d in floats.data] == [0, 1]
    assert all(len(d.embedding) == native_size(model) for d in floats.data)
    assert floats.usage.prompt_tokens > 0
    assert floats.usage.total_tokens == floats.usage.prompt_tokens
    for plain, encoded, decoded in zip(floats.data, packed.data, defaulted.data, strict=True):
        # float32 on the base64 wire: equal to float32 precision.
        assert unpack(encoded.embedding) == pytest.approx(plain.embedding, rel=1e-6, abs=1e-7)
        assert decoded.embedding == pytest.approx(plain.embedding, rel=1e-6, abs=1e-7)

    service = (floats.model_extra or {})["service"]
    assert set(service) == {"request_id", "provider", "latency_ms", "cost"}
    assert service["cost"]["total"] > 0
    assert raw.headers["x-request-id"] == service["request_id"]
    assert raw.headers["x-service-model-used"] == f"{service['provider']}/{model}"
    assert float(raw.headers["x-service-energy-kwh"]) > 0
    assert float(raw.headers["x-service-carbon-gco2e"]) > 0


async def test_a_single_string_gives_one_unit_vector(client: openai.AsyncOpenAI) -> None:
    answer = await client.embeddings.create(model="text-embedding-3-small", input="hello")
    assert len(answer.data) == 1
    vector = answer.data[0].embedding
    assert len(vector) == native_size("text-embedding-3-small")
    assert math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-4)


@pytest.mark.parametrize("model", ["text-embedding-3-small", "gemini-embedding-001"])
async def test_dimensions_shorten_the_vectors(client: openai.AsyncOpenAI, model: str) -> None:
    answer = await client.embeddings.create(model=model, input=TEXTS, dimensions=256)
    assert [len(d.embedding) for d in answer.data] == [256, 256]


@pytest.mark.parametrize(
    ("model", "dimensions"),
    [
        ("text-embedding-ada-002", 256),
        ("mistral-embed", 256),
        ("embed-english-v3.0", 256),
        ("text-embedding-3-small", 4096),
    ],
)
async def test_dimensions_a_model_cannot_honour_are_refused(
    client: openai.AsyncOpenAI, model: str, dimensions: int
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model=model, input=TEXTS, dimensions=dimensions)
    body: Any = caught.value.body
    assert body["code"] == "invalid_request" and body["param"] == "dimensions"


@pytest.mark.parametrize("encoding", ["float", "base64"])
async def test_a_full_batch_of_2048_is_served(client: openai.AsyncOpenAI, encoding: Any) -> None:
    """Short vectors keep the test quick; width is covered above."""
    texts = [f"item number {i}" for i in range(2048)]
    answer = await client.embeddings.create(
        model="text-embedding-3-small", input=texts, dimensions=16, encoding_format=encoding
    )
    assert [d.index for d in answer.data] == list(range(2048))
    assert answer.usage.prompt_tokens >= 2048


@pytest.mark.parametrize(
    ("value", "param"),
    [
        ([f"item {i}" for i in range(2049)], "input"),
        ([], "input"),
        ("", "input[0]"),
        (["fine", ""], "input[1]"),
        ([[1, 2, 3], [100261]], "input[1]"),
        ([[1, 2, 3], []], "input[1]"),
    ],
)
async def test_bad_input_is_invalid_input(
    client: openai.AsyncOpenAI, value: Any, param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="text-embedding-3-small", input=value)
    body: Any = caught.value.body
    assert body["code"] == "invalid_input" and body["param"] == param


async def test_an_input_over_the_model_limit_names_its_index(
    client: openai.AsyncOpenAI,
) -> None:
    too_long = "word " * 600  # ~750 tokens; embed-english-v3.0 reads 512
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="embed-english-v3.0", input=["short", too_long])
    body: Any = caught.value.body
    assert body["code"] == "token_limit_exceeded"
    assert body["index"] == 1 and body["param"] == "input[1]" and body["max_tokens"] == 512


async def test_a_refusal_carries_the_request_id_of_its_usage_record(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    """A refused embeddings request answered without `X-Request-ID`."""
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="text-embedding-3-small", input="")
    request_id = caught.value.request_id
    assert request_id is not None
    await gateway.state.usage.flush()
    records = await gateway.state.db.run(lambda d: usage.list_for_request(d, request_id))
    assert [(r.endpoint, r.status) for r in records] == [("embeddings", 400)]


async def test_an_unknown_model_lists_the_embedding_models(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.embeddings.create(model="text-embedding-9", input=TEXTS)
    body: Any = caught.value.body
    assert body["code"] == "model_not_found" and body["model"] == "text-embedding-9"
    assert set(EMBEDDING_MODELS) <= set(body["available_models"])
    assert "gpt-4o-mini" not in body["available_models"]


async def test_a_chat_model_is_not_an_embedding_model(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="gpt-4o-mini", input=TEXTS)
    assert caught.value.body["param"] == "model"  # type: ignore[index]


async def test_the_provider_field_forces_the_provider(client: openai.AsyncOpenAI) -> None:
    raw = await client.embeddings.with_raw_response.create(
        model="mistral-embed", input=TEXTS, extra_body={"provider": "mistral"}
    )
    assert raw.headers["x-service-model-used"] == "mistral/mistral-embed"
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(
            model="mistral-embed", input=TEXTS, extra_body={"provider": "nobody"}
        )
    assert caught.value.body["param"] == "provider"  # type: ignore[index]


@pytest.mark.parametrize("model", EMBEDDING_MODELS)
async def test_an_upstream_failure_is_a_provider_error(
    gateway: RunningGateway, client: openai.AsyncOpenAI, model: str
) -> None:
    assert gateway.sim is not None
    info = load_catalog().model(model)
    assert info is not None
    gateway.sim.faults.add(Fault(model=info.upstream_id, status=500, remaining=1))
    with pytest.raises(openai.InternalServerError) as caught:
        await client.embeddings.create(model=model, input=TEXTS)
    body: Any = caught.value.body
    assert caught.value.status_code == 502
    assert body["code"] == "provider_error" and body["provider"] == info.provider
    assert "fallback_attempted" not in body


async def test_a_fallback_serves_when_the_model_fails(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="text-embedding-3-small", status=500, remaining=1))
    raw = await client.embeddings.with_raw_response.create(
        model="text-embedding-3-small",
        input=TEXTS,
        extra_body={"service": {"fallbacks": ["mistral-embed"]}},
    )
    assert raw.headers["x-service-model-used"] == "mistral/mistral-embed"
    assert raw.parse().model == "mistral-embed"


async def test_failed_fallbacks_are_reported(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="text-embedding-3-small", status=500, remaining=1))
    gateway.sim.faults.add(Fault(model="mistral-embed", status=503, remaining=1))
    with pytest.raises(openai.InternalServerError) as caught:
        await client.embeddings.create(
            model="text-embedding-3-small",
            input=TEXTS,
            extra_body={"service": {"fallbacks": ["mistral-embed"]}},
        )
    body: Any = caught.value.body  # the deciding (last) failure, as chat reports it
    assert body["code"] == "provider_unavailable" and body["provider"] == "mistral"
    assert body["fallback_attempted"] is True
    assert body["fallback_provider"] == "mistral"
    assert body["fallback_result"] == "failed"
    assert [(a["provider"], a["error"]) for a in body["attempts"]] == [
        ("openai", "provider_error"),
        ("mistral", "provider_unavailable"),
    ]


async def test_each_request_leaves_one_usage_record(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    raw = await client.embeddings.with_raw_response.create(
        model="text-embedding-3-small", input=TEXTS
    )
    request_id = raw.headers["x-request-id"]
    state = gateway.state
    await state.usage.flush()
    records = await state.db.run(lambda d: usage.list_for_request(d, request_id))
    assert len(records) == 1
    record = records[0]
    assert record.endpoint == "embeddings" and record.status == 200
    assert record.provider == "openai" and record.prompt_tokens > 0 and record.cost_usd > 0
    figures = state.health.figures(record.workspace_id, "openai")
    assert figures.samples >= 1 and figures.success_rate == 1.0
