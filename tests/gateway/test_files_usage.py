"""Every stored upload leaves one usage record of its bytes; a refused one leaves none."""

from __future__ import annotations

from typing import Any

import httpx
import openai

from gateway.app.server import RunningGateway


async def usage_rows(gateway: RunningGateway) -> list[dict[str, Any]]:
    await gateway.state.usage.flush()
    return await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT key_id, workspace_id, provider, model, endpoint, status, bytes_stored, "
                "prompt_tokens, cost_usd, project FROM usage_records ORDER BY created_epoch"
            )
        )
    )


async def test_each_stored_upload_records_its_bytes(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    first = await client.files.create(file=("a.txt", b"hello files"), purpose="assistants")
    second = await http.post(
        "/v1/files",
        files={"file": ("b.csv", b"name,city\nJane,Paris\n")},
        data={"purpose": "document"},
        headers={"x-service-project": "contracts"},
    )
    assert second.status_code == 200, second.text
    rows = await usage_rows(gateway)
    key_id = (await http.get("/v1/management/api-keys")).json()["data"][0]["id"]
    common = {
        "key_id": key_id,
        "workspace_id": "default",
        "provider": "gateway",
        "model": "file-storage",
        "endpoint": "files",
        "status": 200,
        "prompt_tokens": 0,
        "cost_usd": 0.0,  # the catalog prices no storage
    }
    assert rows == [
        {**common, "bytes_stored": first.bytes, "project": None},
        {**common, "bytes_stored": second.json()["bytes"], "project": "contracts"},
    ]
    assert (first.bytes, second.json()["bytes"]) == (11, 21)


async def test_a_refused_upload_stores_and_bills_nothing(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    # Each refusal is one record of the invalid request (for the error pages), with no
    # bytes stored and no cost.
    for data, fields in (
        (b"hello", {"purpose": "holiday"}),
        (b"", {"purpose": "assistants"}),
        (b"hello", {"purpose": "assistants", "metadata": "{not json"}),
    ):
        response = await http.post("/v1/files", files={"file": ("a.txt", data)}, data=fields)
        assert response.status_code == 400, fields
    rows = await usage_rows(gateway)
    assert [(r["endpoint"], r["status"], r["bytes_stored"], r["cost_usd"]) for r in rows] == [
        ("files", 400, 0, 0.0)
    ] * 3
