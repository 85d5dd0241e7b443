"""An agent's plain file uploads pass its limits before anything is stored, and the
processing they ask for is charged to the uploader's session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.files.agent_admission import processing_estimate
from gateway.files.input import ServiceOptions
from gateway.files.runtime import FilesRuntime
from providers.catalog import load_catalog
from providers.types import Usage
from tests.agents.conftest import Create, agent_client
from tests.gateway.test_files_api import processed

TEXT = b"Agents upload notes. " * 40


async def upload(me: httpx.AsyncClient, name: str, **service: str) -> httpx.Response:
    return await me.post(
        "/v1/files", files={"file": (name, TEXT)}, data={"purpose": "assistants", **service}
    )


async def stored_files(gateway: RunningGateway) -> int:
    return int(
        await gateway.state.db.run(lambda d: d.execute("SELECT count(*) FROM files").fetchone()[0])
    )


async def test_a_suspended_agent_cannot_upload(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="uploader")
    suspended = await http.post(f"/v1/mcp/agents/{agent['id']}/suspend", json={})
    assert suspended.status_code == 200, suspended.text
    async with agent_client(gateway, agent["key"]) as me:
        refused = await upload(me, "a.txt")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "agent_suspended"
    assert await stored_files(gateway) == 0


async def test_uploads_count_against_the_agents_rpm(
    gateway: RunningGateway, create_agent: Create
) -> None:
    agent = await create_agent(name="uploader", limits={"requests_per_minute": 2})
    async with agent_client(gateway, agent["key"]) as me:
        assert (await upload(me, "a.txt")).status_code == 200
        assert (await upload(me, "b.txt")).status_code == 200
        refused = await upload(me, "c.txt")
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["limit"], error["current"]) == ("rpm_exceeded", 2, 2)
    assert error["type"] == "rate_limit_error"
    assert await stored_files(gateway) == 2


async def test_uploads_count_towards_concurrent_sessions(
    gateway: RunningGateway, create_agent: Create
) -> None:
    agent = await create_agent(name="uploader", limits={"concurrent_sessions": 1})
    async with agent_client(gateway, agent["key"], session="one") as one:
        assert (await upload(one, "a.txt")).status_code == 200
    async with agent_client(gateway, agent["key"], session="two") as two:
        refused = await upload(two, "b.txt")
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "concurrent_limit_exceeded"


async def test_a_spent_budget_refuses_an_upload_that_asks_for_processing(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="uploader", limits={"cost_daily": 0.000001})
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "spend it"}]}
    async with agent_client(gateway, agent["key"]) as me:
        assert (await me.post("/v1/chat/completions", json=chat)).status_code == 200
        refused = await upload(me, "a.txt", vectorize="true")
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["limit_type"]) == ("cost_limit_exceeded", "cost_daily")
    assert await stored_files(gateway) == 0
    assert gateway.state.files.blobs.stored() == []


async def test_processing_is_charged_to_the_uploaders_session(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="ingester")
    async with agent_client(gateway, agent["key"], session="ingest-1") as me:
        answer = await upload(me, "notes.txt", vectorize="true")
    assert answer.status_code == 200, answer.text
    status = await processed(http, answer.json()["id"])
    assert status["status"] == "processed", status
    assert status["processing"]["stages"]["embedding"] == "complete"

    base = f"/v1/mcp/agents/{agent['id']}/usage"
    mine: dict[str, Any] = (await http.get(f"{base}?session=ingest-1")).json()
    default: dict[str, Any] = (await http.get(base)).json()
    assert mine["session"]["cost"] > 0
    assert mine["session"]["cost"] == mine["daily"]["cost"]
    assert mine["daily"]["embedding_tokens"] > 0
    assert default["session"]["cost"] == 0
    # Nothing is left reserved: the upload's hold was given back when processing began.
    assert mine["in_flight"] == 0
    assert mine["daily"]["committed"] == mine["daily"]["cost"]
    assert gateway.state.files.holds == {}
    await gateway.state.usage.flush()
    sessions = await gateway.state.db.run(
        lambda d: [
            tuple(r)
            for r in d.execute(
                "SELECT endpoint, agent_session FROM usage_records ORDER BY created_epoch"
            )
        ]
    )
    assert ("embeddings", "ingest-1") in sessions
    assert ("files", "ingest-1") in sessions


def test_the_estimate_prices_the_processing_asked_for() -> None:
    catalog = load_catalog()
    nothing = processing_estimate(catalog, ServiceOptions(process=True), "txt", 4000, 0, 0.0)
    assert nothing.cost == 0.0
    embedding = catalog.model("text-embedding-3-small")
    assert embedding is not None
    vectors = processing_estimate(catalog, ServiceOptions(vectorize=True), "txt", 4000, 0, 0.0)
    expected = float(embedding.metered_cost(Usage(prompt_tokens=1000)).total)
    assert vectors.cost == pytest.approx(expected) and expected > 0  # 4 bytes a token
    assert vectors.audio_minutes == 0
    ocr = processing_estimate(
        catalog, ServiceOptions(ocr_model="mistral-ocr-latest"), "pdf", 10, 3, 0.0
    )
    assert ocr.cost == pytest.approx(3 * 0.002)  # Mistral's price per page
    audio = processing_estimate(catalog, ServiceOptions(auto_transcribe=True), "wav", 10, 0, 90.0)
    assert audio.audio_minutes == 1.5
    assert audio.cost > 0


@attrs.define
class CountingHold:
    """A hold that counts its releases (the `Hold` protocol)."""

    releases: int = 0

    @property
    def released(self) -> bool:
        return self.releases > 0

    def headers(self) -> dict[str, str]:
        return {}

    def settle(self, usage: Usage) -> None:
        del usage

    def release(self) -> None:
        self.releases += 1

    def __enter__(self) -> CountingHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_an_uploads_hold_waits_for_the_worker_and_is_given_back_once(tmp_path: Path) -> None:
    runtime = FilesRuntime.under(tmp_path, queue_size=1)
    hold = CountingHold()
    runtime.hold_until_started("file_a", hold)
    runtime.started("file_b")  # another file starts: this one still waits
    assert hold.releases == 0
    runtime.started("file_a")  # the worker starts on it: the stages reserve for themselves
    assert hold.releases == 1 and runtime.holds == {}
    runtime.queue.release("file_a")  # the worker's end gives nothing back twice
    runtime.started("file_a")
    assert hold.releases == 1


async def test_concurrent_uploads_cannot_overshoot_the_budget_with_their_processing(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    text = b"Budgets hold for uploads too. " * 134  # 4,020 bytes: ~1,000 tokens estimated
    options = ServiceOptions(vectorize=True)
    estimate = processing_estimate(gateway.state.catalog, options, "txt", len(text), 0, 0.0)
    limit = round(estimate.cost * 2.5, 12)
    agent = await create_agent(name="bulk", limits={"cost_daily": limit})
    answers: list[httpx.Response] = []
    async with agent_client(gateway, agent["key"]) as me:

        async def one(n: int) -> None:
            answers.append(
                await me.post(
                    "/v1/files",
                    files={"file": (f"n{n}.txt", text)},
                    data={"purpose": "assistants", "vectorize": "true"},
                )
            )

        async with trio.open_nursery() as nursery:
            for n in range(8):
                nursery.start_soon(one, n)
    stored = [a.json()["id"] for a in answers if a.status_code == 200]
    refused = [a.json()["error"] for a in answers if a.status_code != 200]
    assert stored and refused
    assert {(e["code"], e["limit_type"]) for e in refused} == {
        ("cost_limit_exceeded", "cost_daily")
    }
    for file_id in stored:
        await processed(http, file_id)  # processed, or an error naming the refused stage
    figures = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
    assert figures["in_flight"] == 0
    assert 0 < figures["daily"]["cost"] <= limit + estimate.cost
