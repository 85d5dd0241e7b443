"""`provider/model` ids everywhere a model is named, and pass-through models the operator
allows, through the official `openai` client against the gateway in demo mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from providers.audio_codec import Pcm, encode
from providers.catalog import load_catalog
from providers.sim.core import Fault
from tests.gateway import documents
from tests.gateway.conftest import gateway_settings

HELLO: Any = [{"role": "user", "content": "Hello"}]
SKIP: Any = {"cache": "skip"}
RULES = "/v1/management/routing-rules"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return gateway_settings(
        tmp_path, usage_writer="thread", passthrough_models="openai/gpt-9*, mistral/open-*"
    )


def sent_model(gateway: RunningGateway, vendor: str) -> Any:
    assert gateway.sim is not None
    return [r.body for r in gateway.sim.requests if r.vendor == vendor][-1]["model"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_chat_model_named_with_its_provider(
    client: openai.AsyncOpenAI, stream: bool
) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model="openai/gpt-5.4-mini", messages=HELLO, stream=stream, extra_body={"service": SKIP}
    )
    assert raw.headers["x-service-model-used"] == "openai/gpt-5.4-mini"
    if not stream:
        assert raw.parse().model == "gpt-5.4-mini"


async def test_a_provider_prefix_must_be_the_models_own(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="anthropic/gpt-5.4-mini", messages=HELLO)
    assert caught.value.body["code"] == "model_not_found"  # type: ignore[index]


async def test_embeddings_rerank_transcription_and_ocr_take_provider_ids(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    vectors = await client.embeddings.create(model="openai/text-embedding-3-small", input="hi")
    assert vectors.model == "text-embedding-3-small"
    ranked = await http.post(
        "/v1/rerank",
        json={"model": "cohere/rerank-v3.5", "query": "river", "documents": ["a river", "b"]},
    )
    assert ranked.status_code == 200, ranked.text
    wav = encode(Pcm(b"\0\0" * 16_000, 16_000), "wav")
    heard = await client.audio.transcriptions.with_raw_response.create(
        model="openai/whisper-1", file=("a.wav", wav)
    )
    assert heard.headers["x-service-provider"] == "openai"
    pdf = documents.pdf_with_text(["Invoice: 4711"])
    read = await http.post(
        "/v1/ocr",
        files={"file": ("a.pdf", pdf)},
        data={"model": "mistral/mistral-ocr-latest"},
        timeout=60,
    )
    assert read.status_code == 200, read.text
    assert read.json()["_gateway"]["model"] == "mistral-ocr-latest"


async def test_fallbacks_and_rules_take_provider_ids(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-5.4-mini", status=500, remaining=1))
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-5.4-mini",
        messages=HELLO,
        extra_body={"service": {"cache": "skip", "fallbacks": ["google/gemini-2.5-flash"]}},
    )
    assert raw.headers["x-service-model-used"] == "google/gemini-2.5-flash"
    rule = {
        "name": "to claude",
        "conditions": {"models": ["openai/gpt-5.4-mini"]},
        "actions": {"route_to": "anthropic/claude-haiku-4-5"},
    }
    created = await http.post(RULES, json=rule)
    assert created.status_code == 201, created.text
    routed = await client.chat.completions.with_raw_response.create(
        model="gpt-5.4-mini", messages=HELLO, extra_body={"service": SKIP}
    )
    assert routed.headers["x-service-model-used"] == "anthropic/claude-haiku-4-5"


async def test_a_model_is_read_by_its_provider_id(client: openai.AsyncOpenAI) -> None:
    model = await client.models.retrieve("openai/gpt-5.4-mini")
    assert model.id == "gpt-5.4-mini"
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("google/gpt-5.4-mini")


# -- pass-through models --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt-9-preview", "openai/gpt-9-preview"])
async def test_an_allowed_model_is_passed_through_and_priced_at_the_ceiling(
    client: openai.AsyncOpenAI, gateway: RunningGateway, name: str
) -> None:
    answer = await client.chat.completions.create(
        model=name, messages=HELLO, extra_body={"service": SKIP}
    )
    assert sent_model(gateway, "openai") == "gpt-9-preview"
    assert answer.model == "gpt-9-preview"
    assert answer.usage is not None
    ceiling = max(
        load_catalog().models(provider="openai", capability="chat"),
        key=lambda m: 3 * m.pricing.input_per_1m + m.pricing.output_per_1m,
    )
    expected = ceiling.cost(answer.usage.prompt_tokens, answer.usage.completion_tokens)
    service: Any = (answer.model_extra or {})["service"]
    assert service["cost"]["total"] == pytest.approx(expected.total) and expected.total > 0


async def test_parameters_are_left_to_the_vendor_of_a_pass_through_model(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    await client.chat.completions.create(
        model="gpt-9-preview",
        messages=HELLO,
        reasoning_effort="high",
        verbosity="low",
        extra_body={"service": SKIP},
    )
    assert sent_model(gateway, "openai") == "gpt-9-preview"


async def test_a_pass_through_embedding_model_is_priced_as_its_kind(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    answer = await client.embeddings.create(model="openai/gpt-9-embed", input="hi")
    assert sent_model(gateway, "openai") == "gpt-9-embed"
    dearest = load_catalog().model("text-embedding-3-large")
    assert dearest is not None
    service: Any = (answer.model_extra or {})["service"]
    assert service["cost"]["total"] == pytest.approx(
        dearest.cost(answer.usage.prompt_tokens, 0).total
    )


async def test_models_the_operator_did_not_allow_are_not_found(
    client: openai.AsyncOpenAI,
) -> None:
    for name in ("gpt-10", "anthropic/gpt-9-preview", "mistral/closed-model", "openx"):
        with pytest.raises(openai.NotFoundError, match=name):
            await client.chat.completions.create(model=name, messages=HELLO)


async def test_a_pass_through_model_is_described(client: openai.AsyncOpenAI) -> None:
    model = await client.models.retrieve("mistral/open-mistral-9")
    service: Any = (model.model_extra or {})["service"]
    assert (model.id, service["provider"], service["status"]) == (
        "open-mistral-9",
        "mistral",
        "beta",
    )


async def test_a_bare_pass_through_id_takes_the_first_matching_provider(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    await client.chat.completions.create(
        model="open-mistral-9", messages=HELLO, extra_body={"service": SKIP}
    )
    assert sent_model(gateway, "mistral") == "open-mistral-9"


async def test_a_name_no_vendor_could_have_is_not_passed_through(http: httpx.AsyncClient) -> None:
    """An id with control characters, spaces or other letters is no vendor's: neither a
    forced provider nor the operator's pass-through rules send it (it went back to the
    client in `X-Service-Model-Used` and broke the answer's head: a 500)."""
    for name in ("rerank-\x00x", "rerank x", "rerank-\u00e9", "mistral/open-\x1b"):
        forced = await http.post(
            "/v1/rerank",
            json={"model": name, "provider": "cohere", "query": "q", "documents": ["a"]},
        )
        assert forced.status_code == 404, forced.text
        assert forced.json()["error"]["code"] == "model_not_found"
    allowed = await http.post(
        "/v1/chat/completions",
        json={"model": "mistral/open-\x1b", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert allowed.status_code == 404, allowed.text
