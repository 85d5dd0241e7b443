"""POST /v1/files/search through the real HTTP interface: vectorized files are found by
meaning through the shared vector index, filtered by collection and ids, kept to their
workspace, and gone from the index once deleted."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway

from .conftest import ADMIN_KEY
from .org_world import build_world
from .test_files_api import processed, upload

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SEARCH = "/v1/files/search"
TEXTS = {
    "volcano.txt": "Volcanic eruptions send lava and ash over the mountain villages.",
    "bread.txt": "Knead the dough, let the yeast rise, then bake the bread in the oven.",
    "tides.txt": "The moon pulls the ocean, and the tides rise and fall on the coast.",
}


async def vectorized(http: httpx.AsyncClient, name: str, text: str, collection: str) -> str:
    answer = await upload(
        http, name, text.encode(), vectorize="true", collection=collection, process="true"
    )
    assert answer.status_code == 200, answer.text
    status = await processed(http, answer.json()["id"])
    assert status["status"] == "processed", status
    return str(answer.json()["id"])


async def hits(http: httpx.AsyncClient, **body: Any) -> list[dict[str, Any]]:
    response = await http.post(SEARCH, json=body)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


async def test_vectorized_files_are_found_filtered_and_forgotten_on_delete(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    ids = {}
    for name, text in TEXTS.items():
        ids[name] = await vectorized(http, name, text, "kitchen" if "bread" in name else "nature")
    # Not vectorized: never searched.
    plain = await upload(http, "plain.txt", b"Lava and ash from the volcano.")
    assert plain.status_code == 200
    found = await hits(http, query="lava and ash from a volcanic eruption", top_k=3)
    assert found[0]["file_id"] == ids["volcano.txt"]
    assert found[0]["filename"] == "volcano.txt" and found[0]["collection"] == "nature"
    assert found[0]["text"] == TEXTS["volcano.txt"] and found[0]["page"] == 1
    assert found[0]["embedding_model"] == "text-embedding-3-small"
    assert [h["score"] for h in found] == sorted((h["score"] for h in found), reverse=True)
    assert plain.json()["id"] not in {h["file_id"] for h in found}
    kitchen = await hits(http, query="lava and ash", collection="kitchen")
    assert {h["file_id"] for h in kitchen} == {ids["bread.txt"]}
    only = await hits(http, query="bread", file_ids=[ids["tides.txt"]])
    assert [h["file_id"] for h in only] == [ids["tides.txt"]]
    assert await hits(http, query="lava", embedding_model="mistral-embed") == []
    # Another workspace's key finds nothing of this one's.
    world = await build_world(http, ADMIN_KEY)
    other = await http.post(
        SEARCH, json={"query": "lava"}, headers={"authorization": f"Bearer {world.other_key}"}
    )
    assert other.status_code == 200 and other.json()["data"] == []
    # Deleted: out of the answers and out of the in-memory index.
    assert (await http.delete(f"/v1/files/{ids['volcano.txt']}")).status_code == 200
    again = await hits(http, query="lava and ash from a volcanic eruption", top_k=5)
    assert ids["volcano.txt"] not in {h["file_id"] for h in again}
    snapshot = gateway.state.files.index.cached("default")
    assert snapshot is not None and ids["volcano.txt"] not in snapshot.codes
    assert sum(space.rows for space in snapshot.spaces.values()) == 2


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "x", "top_k": 0},
        {"query": "x", "top_k": 51},
        {"query": "x", "top_k": True},
        {"query": "x", "file_ids": "file-1"},
        {"query": "x", "collection": 3},
        {"query": "x", "extra": 1},
    ],
)
async def test_bad_search_bodies_are_400(http: httpx.AsyncClient, body: dict[str, Any]) -> None:
    response = await http.post(SEARCH, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"
