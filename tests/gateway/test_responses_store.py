"""Stored responses obey retention and erasure as files do: expired ones are erased by
the retention worker, and an erased one leaves no byte of its content under the data
directory, across a restart."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from gateway.responses.retention import sweep as sweep_responses
from store.responses import get
from tests.durability.test_erasure import found_under, serve_once
from tests.gateway.conftest import ADMIN_KEY, gateway_settings

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


ODD = 'Say "hi"\nback, \\ ü 日本 \u2028 ok'


async def with_client(
    settings: Settings, then: Callable[[openai.AsyncOpenAI], Awaitable[None]]
) -> None:
    """A gateway on the settings' data directory, the `openai` package pointed at it,
    `then(client)`, then a clean shutdown (its lifespan ends: the writers drain)."""
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        running = await nursery.start(
            partial(run_gateway, settings, env={}, shutdown_trigger=stop.wait)
        )
        client = openai.AsyncOpenAI(base_url=f"{running.url}/v1", api_key=ADMIN_KEY)
        async with client:
            await then(client)
        stop.set()


async def test_a_response_is_found_at_once_and_a_clean_shutdown_keeps_it(
    tmp_path: Path,
) -> None:
    """Read-your-writes through the usage writer's real process: a response is retrieved,
    listed and continued the moment its answer (or its stream's last event) arrives,
    before its batch is written; a shutdown right after loses none of them."""
    settings = gateway_settings(tmp_path, usage_writer="process")
    made: dict[str, str] = {}

    async def converse(client: openai.AsyncOpenAI) -> None:
        first = await client.responses.create(model="gpt-4o-mini", input=ODD)
        assert (await client.responses.retrieve(first.id)).output_text == first.output_text
        items = await client.responses.input_items.list(first.id)
        assert [item.model_dump()["content"][0]["text"] for item in items.data] == [ODD]
        async with await client.responses.create(
            model="gpt-4o-mini", input="And?", previous_response_id=first.id, stream=True
        ) as stream:
            events = [event async for event in stream]
        second = events[-1].response  # type: ignore[union-attr]
        third = await client.responses.create(
            model="gpt-4o-mini", input="Last.", previous_response_id=second.id
        )
        made.update(first=first.id, second=second.id, third=third.id, text=second.output_text)

    await with_client(settings, converse)

    async def after_restart(client: openai.AsyncOpenAI) -> None:
        assert (await client.responses.retrieve(made["second"])).output_text == made["text"]
        chained = await client.responses.create(
            model="gpt-4o-mini", input="Again.", previous_response_id=made["third"]
        )
        assert chained.previous_response_id == made["third"]

    await with_client(settings, after_restart)
