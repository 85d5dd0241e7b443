"""Rerank through plain HTTP (the `openai` client has no rerank), against Cohere's simulator."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from store import usage

QUERY = "What is the capital of France?"
DOCUMENTS = [
    "Berlin is the capital of Germany.",
    "Paris is the capital of France.",
    "The capital of France has many museums.",
    "Bananas are yellow.",
]


async def rerank(http: httpx.AsyncClient, **body: Any) -> httpx.Response:
    return await http.post("/v1/rerank", json={"model": "rerank-v3.5", **body})


async def test_results_are_ordered_best_first(http: httpx.AsyncClient) -> None:
    response = await rerank(http, query=QUERY, documents=DOCUMENTS)
    assert response.status_code == 200
    answer = response.json()
    results = answer["results"]
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert sorted(r["index"] for r in results) == [0, 1, 2, 3]
    assert results[0]["index"] == 1 and results[-1]["index"] == 3
    assert all("document" not in r for r in results)
    assert answer["meta"]["billed_units"]["search_units"] == 1
    service = answer["service"]
    assert set(service) == {"request_id", "provider", "latency_ms", "cost"}
    assert service["provider"] == "cohere" and service["cost"]["total"] == pytest.approx(0.002)
    assert answer["id"] == service["request_id"] == response.headers["x-request-id"]
    assert response.headers["x-service-model-used"] == "cohere/rerank-v3.5"
    assert float(response.headers["x-service-energy-kwh"]) > 0


async def test_top_n_and_returned_documents_with_ids(http: httpx.AsyncClient) -> None:
    documents = [{"text": text, "id": f"doc-{i}"} for i, text in enumerate(DOCUMENTS)]
    documents[3] = {"text": DOCUMENTS[3]}  # an id is optional
    response = await rerank(http, query=QUERY, documents=documents, top_n=2, return_documents=True)
    top = response.json()["results"]
    everything = await rerank(http, query=QUERY, documents=documents, return_documents=True)
    ranking = everything.json()["results"]
    assert [r["index"] for r in top] == [r["index"] for r in ranking[:2]]
    for result in ranking:
        expected = documents[result["index"]]
        assert result["document"] == expected  # text, and the id when one was given
    assert {"text": DOCUMENTS[3]} in [r["document"] for r in ranking]


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"query": QUERY, "documents": []}, "invalid_documents", "documents"),
        ({"query": QUERY}, "invalid_documents", "documents"),
        ({"query": QUERY, "documents": "Paris"}, "invalid_documents", "documents"),
        ({"query": QUERY, "documents": ["ok", 7]}, "invalid_documents", "documents[1]"),
        ({"query": QUERY, "documents": [{"id": "x"}]}, "invalid_documents", "documents[0]"),
        ({"query": QUERY, "documents": ["d"] * 1001}, "too_many_documents", "documents"),
        ({"query": "q " * 5000, "documents": DOCUMENTS}, "query_too_long", "query"),
        ({"query": "", "documents": DOCUMENTS}, "invalid_request", "query"),
        ({"query": QUERY, "documents": DOCUMENTS, "top_n": 5}, "invalid_top_n", "top_n"),
        ({"query": QUERY, "documents": DOCUMENTS, "top_n": 0}, "invalid_request", "top_n"),
        (
            {"query": QUERY, "documents": DOCUMENTS, "return_documents": "yes"},
            "invalid_request",
            "return_documents",
        ),
    ],
)
async def test_bad_requests_name_the_spec_code(
    http: httpx.AsyncClient, body: dict[str, Any], code: str, param: str
) -> None:
    response = await rerank(http, **body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == code and error["param"] == param


async def test_models_that_do_not_rerank(http: httpx.AsyncClient) -> None:
    unknown = await http.post(
        "/v1/rerank", json={"model": "rerank-v9", "query": QUERY, "documents": DOCUMENTS}
    )
    assert unknown.status_code == 404
    error = unknown.json()["error"]
    assert error["code"] == "model_not_found" and error["available_models"] == [
        "rerank-v3.5",
        "rerank-v4.0-pro",
        "rerank-v4.0-fast",
    ]
    chat = await http.post(
        "/v1/rerank", json={"model": "gpt-4o-mini", "query": QUERY, "documents": DOCUMENTS}
    )
    assert chat.status_code == 400 and chat.json()["error"]["param"] == "model"


async def test_an_upstream_failure_is_a_provider_error(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="rerank-v3.5", status=500, remaining=1))
    response = await rerank(http, query=QUERY, documents=DOCUMENTS)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "provider_error" and error["provider"] == "cohere"
    assert error["type"] == "provider_error"
    await gateway.state.usage.flush()
    request_id = response.headers["x-request-id"]  # it had none
    records = await gateway.state.db.run(lambda d: usage.list_for_request(d, request_id))
    assert [(r.endpoint, r.status) for r in records] == [("rerank", 502)]


async def test_each_request_leaves_one_usage_record_and_feeds_health(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="rerank-v3.5", status=500, remaining=1))
    failed = await rerank(http, query=QUERY, documents=DOCUMENTS)
    served = await rerank(http, query=QUERY, documents=DOCUMENTS)
    state = gateway.state
    await state.usage.flush()
    ids = [served.headers["x-request-id"]]
    records = await state.db.run(lambda d: usage.list_for_request(d, ids[0]))
    assert [(r.endpoint, r.status, r.provider) for r in records] == [("rerank", 200, "cohere")]
    assert records[0].cost_usd == pytest.approx(0.002) and records[0].energy_kwh > 0
    assert failed.status_code == 502
    figures = state.health.figures(records[0].workspace_id, "cohere")
    assert figures.samples == 2 and figures.last_error_type == "provider_error"


async def test_a_key_without_the_embeddings_permission_is_refused(
    http: httpx.AsyncClient,
) -> None:
    created = await http.post(
        "/v1/management/api-keys", json={"name": "chat only", "permissions": ["chat"]}
    )
    assert created.status_code in (200, 201), created.text
    key = created.json()["key"]
    response = await http.post(
        "/v1/rerank",
        json={"model": "rerank-v3.5", "query": QUERY, "documents": DOCUMENTS},
        headers={"authorization": f"Bearer {key}"},
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_permissions"
