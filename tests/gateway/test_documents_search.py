"""POST /v1/data/search on a small corpus made here: the right chunk in the top 3 for each
query; filters, classification permissions and workspaces respected; rerank through the
gateway's rerank service."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway

from .conftest import ADMIN_KEY
from .org_world import build_world
from .test_documents_api import DOCS, finished, upload

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SEARCH = "/v1/data/search"

CORPUS = {
    "handbook.md": b"""# Vacation policy

Employees receive twenty five days of paid vacation each year. Unused vacation days
expire at the end of March.

# Expense reports

Submit expense reports within thirty days with receipts attached. Travel expenses above
five hundred euros need approval from a manager.

# Remote work

Staff may work remotely up to three days per week. A laptop and a headset are provided.
""",
    "security.md": b"""# Password rules

Passwords must have at least fourteen characters and are rotated every ninety days.

# Incident response

Report a suspected breach to the security team within one hour. The on-call engineer
isolates affected servers and preserves logs for forensic analysis.
""",
    "kitchen.txt": b"""Sourdough bread needs a lively starter, flour, water and salt.

Bake the loaf in a covered dutch oven at a high temperature for crisp crust.

Tomato soup is simmered with basil, garlic and olive oil, then blended smooth.
""",
}

# Query -> a phrase the chunk that answers it contains.
QUERIES = {
    "how many vacation days do employees get": "paid vacation",
    "approval for travel expenses receipts": "expense reports",
    "working from home remotely laptop": "work remotely",
    "password length rotation": "fourteen characters",
    "what to do after a security breach": "suspected breach",
    "baking sourdough bread with a starter": "Sourdough",
    "soup with basil and garlic": "Tomato soup",
}


async def corpus(http: httpx.AsyncClient, **fields: str) -> dict[str, str]:
    ids = {}
    for name, data in CORPUS.items():
        made = await upload(http, name, data, chunk_size_tokens="100", **fields)
        ids[name] = made["id"]
    for document_id in ids.values():
        assert (await finished(http, document_id))["status"] == "completed"
    return ids


async def search(http: httpx.AsyncClient, **body: Any) -> list[dict[str, Any]]:
    response = await http.post(SEARCH, json=body)
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["data"]
    return hits


async def test_the_right_chunk_is_in_the_top_three(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    await corpus(http, chunking_strategy="paragraph")
    for query, phrase in QUERIES.items():
        hits = await search(http, query=query, top_k=3)
        assert len(hits) == 3
        assert any(phrase in hit["content"] for hit in hits), (query, hits)
        for hit in hits:
            assert {"document_id", "chunk_id", "content", "score", "page_number"} <= set(hit)
            assert hit["page_number"] == 1


async def test_filters_and_rerank(http: httpx.AsyncClient, gateway: RunningGateway) -> None:
    ids = await corpus(http)
    only = await search(http, query="vacation days", filters={"document_ids": [ids["kitchen.txt"]]})
    assert {hit["document_id"] for hit in only} == {ids["kitchen.txt"]}
    tagged = await upload(
        http, "tagged.txt", b"Vacation days for interns.", metadata='{"team": "interns"}'
    )
    await finished(http, tagged["id"])
    meta = await search(http, query="vacation", filters={"metadata": {"team": "interns"}})
    assert [hit["document_id"] for hit in meta] == [tagged["id"]]
    none = await search(http, query="vacation", filters={"classification": "public"})
    assert none == []
    reranked = await search(http, query="password rules", top_k=2, rerank=True)
    assert len(reranked) == 2
    assert all("rerank" in hit["scores"] for hit in reranked)
    scores = [hit["score"] for hit in reranked]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "x", "top_k": 0},
        {"query": "x", "top_k": 51},
        {"query": "x", "filters": {"classification": "secret"}},
        {"query": "x", "filters": {"colour": 1}},
        {"query": "x", "rerank": 3},
        {"query": "x", "extra": 1},
    ],
)
async def test_bad_search_bodies_are_400(
    http: httpx.AsyncClient, gateway: RunningGateway, body: dict[str, Any]
) -> None:
    response = await http.post(SEARCH, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"


async def test_workspaces_and_classifications_are_respected(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    phi = await upload(
        http, "phi.txt", b"Blood pressure readings of the patient.", data_classification="phi"
    )
    await finished(http, phi["id"])
    prod = await http.post("/v1/management/api-keys", json={"name": "app", "type": "prod"})
    assert prod.status_code == 201, prod.text
    as_prod = {"authorization": f"Bearer {prod.json()['key']}"}
    # A key without an owner or admin role does not see PHI: not listed, 404, not found.
    assert (await http.get(f"{DOCS}/{phi['id']}", headers=as_prod)).status_code == 404
    listed = (await http.get(DOCS, headers=as_prod)).json()
    assert listed["total"] == 0
    hits = await http.post(SEARCH, json={"query": "blood pressure"}, headers=as_prod)
    assert hits.json()["data"] == []
    refused = await http.post(
        DOCS,
        files={"file": ("p.txt", b"x")},
        data={"data_classification": "privileged"},
        headers=as_prod,
    )
    assert refused.status_code == 403
    # The admin key sees it.
    assert [h["document_id"] for h in await search(http, query="blood pressure")] == [phi["id"]]
    # Another workspace's admin sees nothing of this one's.
    world = await build_world(http, ADMIN_KEY)
    as_other = {"authorization": f"Bearer {world.other_key}"}
    assert (await http.get(f"{DOCS}/{phi['id']}", headers=as_other)).status_code == 404
    assert (await http.delete(f"{DOCS}/{phi['id']}", headers=as_other)).status_code == 404
    assert (await http.get(f"{DOCS}/{phi['id']}/chunks", headers=as_other)).status_code == 404
    found = await http.post(SEARCH, json={"query": "blood pressure"}, headers=as_other)
    assert found.json()["data"] == []
    assert (await http.get(f"{DOCS}/{phi['id']}")).status_code == 200
