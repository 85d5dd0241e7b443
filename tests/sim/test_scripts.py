"""The simulator's scripted answers (`/_sim/replies`, `/_sim/transcripts`): queued texts
are said by the next answers, in order; DELETE forgets those not said yet."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import openai
import pytest

from providers.sim.server import SimServer


@pytest.fixture
async def control(sim: SimServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"http://{sim.host}:{sim.port}/_sim") as client:
        yield client


async def ask(client: openai.AsyncOpenAI) -> str:
    answer = await client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
    )
    return answer.choices[0].message.content or ""


@pytest.mark.parametrize("path", ["/replies", "/transcripts"])
async def test_a_script_queues_texts_and_forgets_them_when_cleared(
    control: httpx.AsyncClient, path: str
) -> None:
    queued = await control.post(path, json={"texts": ["One.", "Two."]})
    assert (queued.status_code, queued.json()) == (201, {"queued": 2})
    assert (await control.post(path, json={"texts": ["Three."]})).json() == {"queued": 3}
    refused = await control.post(path, json={"texts": "not a list"})
    assert refused.status_code == 400
    assert (await control.delete(path)).json() == {"cleared": 3}
    assert (await control.delete(path)).json() == {"cleared": 0}


async def test_scripted_replies_are_said_in_order_then_the_usual_answer(
    control: httpx.AsyncClient, openai_client: openai.AsyncOpenAI
) -> None:
    usual = await ask(openai_client)
    await control.post("/replies", json={"texts": ["Scripted one.", "Scripted two."]})
    assert [await ask(openai_client) for _ in range(3)] == ["Scripted one.", "Scripted two.", usual]
