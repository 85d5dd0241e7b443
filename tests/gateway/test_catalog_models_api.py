"""Every chat, embedding and rerank model of the catalog answers, through the gateway and
the simulators, by its id and by `provider/id`; and each simulated vendor lists them."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from providers.catalog import load_catalog
from providers.sim.anthropic import MODELS as ANTHROPIC_MODELS
from providers.sim.cohere import MODELS as COHERE_MODELS
from providers.sim.google import CHAT_MODELS, EMBEDDING_MODELS
from providers.sim.mistral import MODELS as MISTRAL_MODELS
from providers.sim.openai.common import MODELS as OPENAI_MODELS

CATALOG = load_catalog()
HELLO: Any = [{"role": "user", "content": "Hello"}]
LISTED = {
    "openai": set(OPENAI_MODELS),
    "anthropic": {m[0] for m in ANTHROPIC_MODELS},
    "google": set(CHAT_MODELS) | set(EMBEDDING_MODELS),
    "mistral": set(MISTRAL_MODELS),
    "cohere": {m[0] for m in COHERE_MODELS},
}


def ids(kind: str) -> list[str]:
    return [m.id for m in CATALOG.models() if m.type == kind and m.provider in LISTED]


@pytest.mark.parametrize("model", ids("chat"))
async def test_every_chat_model_answers(client: openai.AsyncOpenAI, model: str) -> None:
    info = CATALOG.model(model)
    assert info is not None
    named, skip = f"{info.provider}/{model}", {"service": {"cache": "skip"}}
    if not info.served_on("chat_completions"):  # OpenAI's Responses-only models
        answer = await client.responses.with_raw_response.create(
            model=named, input="Hello", extra_body=skip
        )
        assert answer.parse().output_text
        used = answer.headers["x-service-model-used"]
    else:
        raw = await client.chat.completions.with_raw_response.create(
            model=named, messages=HELLO, extra_body=skip
        )
        assert raw.parse().choices[0].message.content
        used = raw.headers["x-service-model-used"]
    assert used == named
    assert info.upstream_id in LISTED[info.provider]


@pytest.mark.parametrize("model", ids("embedding"))
async def test_every_embedding_model_answers(client: openai.AsyncOpenAI, model: str) -> None:
    answer = await client.embeddings.create(model=model, input="hello")
    assert answer.data and answer.data[0].embedding


@pytest.mark.parametrize("model", ids("rerank"))
async def test_every_rerank_model_answers(http: httpx.AsyncClient, model: str) -> None:
    answer = await http.post(
        "/v1/rerank", json={"model": model, "query": "river", "documents": ["a river", "a stone"]}
    )
    assert answer.status_code == 200, answer.text
