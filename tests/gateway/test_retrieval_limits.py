"""Embeddings and rerank pass the key's limits as chat does: one rpm, tpm and concurrency
budget per key, whichever endpoint spends it, with the spec's 429 and headers."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway

KEYS = "/v1/management/api-keys"
EMBEDDING_MODEL = "text-embedding-3-small"
RERANK = {"model": "rerank-v3.5", "query": "rivers", "documents": ["a river", "a hill"]}
PERMISSIONS = ["chat", "embeddings"]


async def limited_key(http: httpx.AsyncClient, **rate_limits: int) -> str:
    response = await http.post(
        KEYS, json={"name": "limited", "permissions": PERMISSIONS, "rate_limits": rate_limits}
    )
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


def client_for(gateway: RunningGateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0)


async def test_embeddings_answers_carry_the_keys_rate_limit_headers(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await limited_key(http, rpm=5)
    async with client_for(gateway, key) as client:
        raw = await client.embeddings.with_raw_response.create(model=EMBEDDING_MODEL, input="hi")
    assert raw.headers["x-ratelimit-limit-requests"] == "5"
    assert raw.headers["x-ratelimit-remaining-requests"] == "4"
    assert len(raw.parse().data) == 1


async def test_chat_and_embeddings_share_one_requests_per_minute_budget(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await limited_key(http, rpm=2)
    async with client_for(gateway, key) as client:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello"}]
        )
        await client.embeddings.create(model=EMBEDDING_MODEL, input="hello")
        with pytest.raises(openai.RateLimitError) as caught:
            await client.embeddings.create(model=EMBEDDING_MODEL, input="hello again")
    error: Any = caught.value.body
    assert (error["code"], error["limit_type"], error["limit"]) == ("rate_limit_exceeded", "rpm", 2)
    assert error["type"] == "rate_limit_error"
    assert int(caught.value.response.headers["retry-after"]) >= 1


async def test_an_embeddings_batch_larger_than_the_token_limit_is_refused(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await limited_key(http, tpm=50)
    words = " ".join(["river"] * 400)  # far more than 50 tokens
    async with client_for(gateway, key) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            await client.embeddings.create(model=EMBEDDING_MODEL, input=[words])
        small = await client.embeddings.create(model=EMBEDDING_MODEL, input="hi")
    error: Any = caught.value.body
    assert (error["code"], error["limit_type"]) == ("token_limit_exceeded", "tpm")
    assert len(small.data) == 1  # the refusal took nothing from the budget


async def test_rerank_is_limited_too(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    key = await limited_key(http, rpm=1)
    headers = {"authorization": f"Bearer {key}"}
    served = await http.post("/v1/rerank", json=RERANK, headers=headers)
    refused = await http.post("/v1/rerank", json=RERANK, headers=headers)

    assert served.status_code == 200, served.text
    assert served.headers["x-ratelimit-remaining-requests"] == "0"
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert "retry-after" in refused.headers


async def test_a_malformed_request_takes_nothing_from_the_budget(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await limited_key(http, rpm=1)
    async with client_for(gateway, key) as client:
        with pytest.raises(openai.BadRequestError):
            await client.embeddings.create(model=EMBEDDING_MODEL, input="")
        served = await client.embeddings.create(model=EMBEDDING_MODEL, input="hi")
    assert len(served.data) == 1
