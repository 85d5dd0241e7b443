"""Stored responses obey retention and erasure as files do: expired ones are erased by
the retention worker, and an erased one leaves no byte of its content under the data
directory, across a restart."""

from __future__ import annotations

import time

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from gateway.responses.retention import sweep as sweep_responses
from store.responses import get
from tests.durability.test_erasure import found_under, serve_once

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CANARY = "zorbcanary4471qpmx"


async def test_retention_erases_expired_responses(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    kept = await client.responses.create(model="gpt-4o-mini", input="Hi")
    # readable at once, written behind: wait for the row, as retention reads the store
    with trio.fail_after(5):
        while await gateway.state.db.run(lambda d: get(d, "default", kept.id)) is None:  # noqa: ASYNC110 (a row, no event)
            await trio.sleep(0.01)
    assert (
        await sweep_responses(gateway.state.responses_services, now=time.time()) == []
    )  # 30 days to go
    later = time.time() + 31 * 86_400
    assert await sweep_responses(gateway.state.responses_services, now=later) == [kept.id]
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(kept.id)


async def test_an_erased_response_leaves_no_byte_behind(settings: Settings) -> None:
    needles = [CANARY.encode()]
    created: dict[str, str] = {}

    async def create(http: httpx.AsyncClient) -> None:
        body = {"model": "gpt-4o-mini", "input": f"Remember the code {CANARY}, please."}
        answer = await http.post("/v1/responses", json=body)
        assert answer.status_code == 200, answer.text
        created["id"] = answer.json()["id"]

    await serve_once(settings, create)
    assert found_under(settings.data_dir, needles), "the scan must see the canary first"

    async def delete(http: httpx.AsyncClient) -> None:
        answer = await http.delete(f"/v1/responses/{created['id']}")
        assert answer.json() == {"id": created["id"], "object": "response", "deleted": True}

    await serve_once(settings, delete)
    await serve_once(settings, lambda http: _gone(http, created["id"]))
    assert found_under(settings.data_dir, needles) == []


async def _gone(http: httpx.AsyncClient, response_id: str) -> None:
    assert (await http.get(f"/v1/responses/{response_id}")).status_code == 404
