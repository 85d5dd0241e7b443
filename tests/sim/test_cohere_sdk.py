"""The Cohere simulator end to end: the official `cohere` SDK (v2 client) and our adapter.

The SDK runs synchronously in a worker thread while the simulator (`conftest`'s `sim`)
serves on the test's trio loop; its retries are switched off so that errors surface at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

import cohere
import httpx
import pytest
import trio
from cohere.errors import BadRequestError, NotFoundError, TooManyRequestsError

from providers import errors
from providers.adapters import build_adapter
from providers.base import ProviderEndpoint
from providers.cohere import CohereProvider
from providers.sim.cohere import relevance
from providers.sim.core import Fault
from providers.sim.server import SimServer
from providers.types import EmbeddingRequest, RerankRequest

T = TypeVar("T")
RERANK = "rerank-v3.5"
EMBED = "embed-english-v3.0"
QUERY = "capital of France"
DOCUMENTS = [
    "Berlin is the capital of Germany.",
    "Paris is the capital of France.",
    "Bananas are yellow.",
    "France exports wine.",
]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield http


@pytest.fixture
def adapter(sim: SimServer, client: httpx.AsyncClient) -> CohereProvider:
    endpoint = ProviderEndpoint("cohere", sim.base_url("cohere"), "co-test")
    provider = build_adapter(client, endpoint)
    assert isinstance(provider, CohereProvider)
    return provider


@pytest.fixture
def sdk(sim: SimServer) -> Iterator[cohere.ClientV2]:
    """The v2 client without retries, its connection pool closed after the test."""
    with cohere.ClientV2(
        api_key="co-test", base_url=sim.base_url("cohere"), max_retries=0
    ) as client:
        yield client


async def in_thread(call: Callable[[], T]) -> T:
    with trio.fail_after(10):
        return await trio.to_thread.run_sync(call)


# -- the simulator's scoring ---------------------------------------------------------------


def test_relevance_is_word_overlap_in_unit_range() -> None:
    scores = [relevance(QUERY, doc) for doc in DOCUMENTS]
    assert all(0 <= score <= 1 for score in scores)
    assert scores[1] > scores[0] > scores[3] > scores[2]
    assert relevance(QUERY, DOCUMENTS[1]) == scores[1]


# -- the official SDK ----------------------------------------------------------------------


async def test_sdk_rerank(sim: SimServer, sdk: cohere.ClientV2) -> None:
    client = sdk
    answer = await in_thread(
        lambda: client.rerank(model=RERANK, query=QUERY, documents=DOCUMENTS, top_n=3)
    )
    assert [item.index for item in answer.results] == [1, 0, 3]
    scores = [item.relevance_score for item in answer.results]
    assert scores == sorted(scores, reverse=True)
    assert answer.meta is not None and answer.meta.billed_units is not None
    assert answer.meta.billed_units.search_units == 1


async def test_sdk_embed(sim: SimServer, sdk: cohere.ClientV2) -> None:
    client = sdk
    answer = await in_thread(
        lambda: client.embed(
            model=EMBED,
            texts=["hello", "world"],
            input_type="search_query",
            embedding_types=["float"],
        )
    )
    vectors = answer.embeddings.float_ or []
    assert [len(vector) for vector in vectors] == [1024, 1024]
    assert answer.texts == ["hello", "world"]
    assert answer.response_type == "embeddings_by_type"
    assert answer.meta is not None and answer.meta.billed_units is not None
    assert answer.meta.billed_units.input_tokens == 4


async def test_sdk_models_list(sdk: cohere.ClientV2) -> None:
    listing = await in_thread(lambda: sdk.models.list(endpoint="rerank"))
    assert RERANK in [model.name for model in listing.models]
    assert all("rerank" in (model.endpoints or []) for model in listing.models)


async def test_sdk_rate_limit_is_too_many_requests(sim: SimServer, sdk: cohere.ClientV2) -> None:
    sim.faults.add(Fault(model=RERANK, status=429, remaining=1))
    client = sdk
    with pytest.raises(TooManyRequestsError) as caught:
        await in_thread(lambda: client.rerank(model=RERANK, query=QUERY, documents=DOCUMENTS))
    assert caught.value.status_code == 429
    assert "message" in caught.value.body


async def test_sdk_bad_request_and_not_found(sim: SimServer, sdk: cohere.ClientV2) -> None:
    client = sdk
    with pytest.raises(BadRequestError):
        await in_thread(lambda: client.rerank(model=RERANK, query=QUERY, documents=[]))
    with pytest.raises(NotFoundError):
        await in_thread(lambda: client.rerank(model="unknown-x", query=QUERY, documents=["a"]))


# -- our adapter over a real httpx client --------------------------------------------------


async def test_adapter_rerank_order_and_top_n(adapter: CohereProvider) -> None:
    result = await adapter.rerank(RerankRequest(model=RERANK, query=QUERY, documents=DOCUMENTS))
    assert [hit.index for hit in result.hits] == [1, 0, 3, 2]
    assert result.search_units == 1
    top = await adapter.rerank(
        RerankRequest(model=RERANK, query=QUERY, documents=DOCUMENTS, top_n=2)
    )
    assert list(top.hits) == list(result.hits[:2])


async def test_adapter_rerank_bills_per_hundred_documents(adapter: CohereProvider) -> None:
    documents = [f"document {i}" for i in range(250)]
    result = await adapter.rerank(
        RerankRequest(model=RERANK, query="document", documents=documents)
    )
    assert result.search_units == 3
    assert len(result.hits) == 250


async def test_adapter_embed_batches_past_96(adapter: CohereProvider) -> None:
    texts = [f"text number {i}" for i in range(100)]
    result = await adapter.embed(EmbeddingRequest(model=EMBED, inputs=texts))
    assert len(result.vectors) == 100
    single = await adapter.embed(EmbeddingRequest(model=EMBED, inputs=[texts[97]]))
    assert result.vectors[97] == single.vectors[0]
    assert result.usage.prompt_tokens > 0


async def test_adapter_embed_v4_dimensions(adapter: CohereProvider) -> None:
    result = await adapter.embed(EmbeddingRequest(model="embed-v4.0", inputs=["a"], dimensions=256))
    assert len(result.vectors[0]) == 256


async def test_adapter_list_models(adapter: CohereProvider) -> None:
    assert EMBED in await adapter.list_models()


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (429, errors.ModelOverloaded),
        (401, errors.AuthenticationFailed),
        (400, errors.InvalidUpstreamRequest),
        (500, errors.UpstreamHTTPError),
        (503, errors.UpstreamUnavailable),
    ],
)
async def test_adapter_maps_faults(
    sim: SimServer, adapter: CohereProvider, status: int, cls: type[errors.ProviderError]
) -> None:
    sim.faults.add(Fault(model="*", vendor="cohere", status=status))
    with pytest.raises(cls):
        await adapter.rerank(RerankRequest(model=RERANK, query=QUERY, documents=DOCUMENTS))
    with pytest.raises(cls):
        await adapter.embed(EmbeddingRequest(model=EMBED, inputs=["a"]))


@pytest.mark.parametrize(
    ("request_", "cls"),
    [
        (RerankRequest(model="unknown-rerank", query=QUERY, documents=["a"]), errors.ModelNotFound),
        (RerankRequest(model=RERANK, query=QUERY, documents=[]), errors.InvalidUpstreamRequest),
        (
            RerankRequest(model=RERANK, query=QUERY, documents=["d"] * 1001),
            errors.InvalidUpstreamRequest,
        ),
        (RerankRequest(model=EMBED, query=QUERY, documents=["a"]), errors.InvalidUpstreamRequest),
    ],
    ids=["unknown-model", "no-documents", "too-many-documents", "wrong-kind"],
)
async def test_adapter_rerank_refusals(
    adapter: CohereProvider, request_: RerankRequest, cls: type[errors.ProviderError]
) -> None:
    with pytest.raises(cls):
        await adapter.rerank(request_)


async def test_adapter_client_timeout_is_mapped(sim: SimServer) -> None:
    sim.faults.add(Fault(model=RERANK, delay_ms=1000))
    endpoint = ProviderEndpoint("cohere", sim.base_url("cohere"), "co-test")
    async with httpx.AsyncClient(timeout=0.1) as short:
        adapter = CohereProvider(short, endpoint)
        with trio.fail_after(5), pytest.raises(errors.UpstreamTimeout):
            await adapter.rerank(RerankRequest(model=RERANK, query=QUERY, documents=DOCUMENTS))
