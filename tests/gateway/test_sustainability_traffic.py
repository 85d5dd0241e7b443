"""The reports from real traffic: every family records the attribution headers and an energy
estimate, and repeated chat questions become a caching opportunity."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.footprint import load_footprint_factors

from . import documents

LABELS = {"X-Service-Project": "apollo", "X-Service-Team": "search"}
QUESTION = [{"role": "user", "content": "Which planet has the most moons?"}]


async def traffic(client: openai.AsyncOpenAI, http: httpx.AsyncClient) -> None:
    for _ in range(3):  # the same question, the cache skipped: answered live three times
        await client.chat.completions.create(
            model="gpt-4o",
            messages=QUESTION,  # type: ignore[arg-type]
            extra_headers=LABELS,
            extra_body={"service": {"cache": "skip"}},
        )
    await client.embeddings.create(
        model="text-embedding-3-small", input=["moons", "planets"], extra_headers=LABELS
    )
    audio = (
        await client.audio.speech.create(
            model="tts-1",
            voice="sage",
            input="Saturn has the most known moons.",
            response_format="wav",
            extra_headers=LABELS,
        )
    ).content
    await client.audio.transcriptions.create(
        model="whisper-1", file=("a.wav", audio), extra_headers=LABELS
    )
    pdf = documents.pdf_with_text(["Saturn: 146 moons"])
    answer = await http.post("/v1/ocr", files={"file": ("m.pdf", pdf)}, headers=LABELS, timeout=60)
    assert answer.status_code == 200, answer.text


async def rows(gateway: RunningGateway) -> list[dict[str, Any]]:
    await gateway.state.usage.flush()
    return await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT endpoint, model, project, team, energy_kwh, carbon_gco2e, prompt_hash "
                "FROM usage_records ORDER BY created_epoch, rowid"
            )
        )
    )


async def test_every_family_records_attribution_and_a_footprint(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await traffic(client, http)
    found = await rows(gateway)
    assert [r["endpoint"] for r in found] == [
        "chat",
        "chat",
        "chat",
        "embeddings",
        "audio.speech",
        "audio.transcriptions",
        "ocr",
    ]
    for r in found:
        assert (r["project"], r["team"]) == ("apollo", "search"), r
        assert r["energy_kwh"] > 0 and r["carbon_gco2e"] > 0, r
    hashes = {r["prompt_hash"] for r in found if r["endpoint"] == "chat"}
    assert len(hashes) == 1 and None not in hashes
    assert all(r["prompt_hash"] is None for r in found if r["endpoint"] != "chat")


async def test_repeated_questions_become_a_caching_opportunity(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await traffic(client, http)
    found = await rows(gateway)
    chat = [r for r in found if r["endpoint"] == "chat"]
    total = sum(r["carbon_gco2e"] for r in found)
    answer = await http.get(
        "/v1/sustainability/optimization-opportunities",
        params={"days": "1", "project_id": "apollo", "team_id": "search"},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["analyzed_requests"] == len(found) == 7
    caching = next(o for o in body["opportunities"] if o["type"] == "enable_caching")
    repeats_g = sum(r["carbon_gco2e"] for r in chat) * 2 / 3
    assert caching["potential_savings_kg_co2"] == pytest.approx(repeats_g / 1000 * 30)
    assert caching["affected_requests_percent"] == pytest.approx(2 / 7 * 100)
    assert caching["potential_savings_percent"] == pytest.approx(repeats_g / total * 100)
    other = await http.get(
        "/v1/sustainability/optimization-opportunities", params={"project_id": "hermes"}
    )
    assert other.json()["opportunities"] == [] and other.json()["analyzed_requests"] == 0


async def test_the_local_ocr_engine_is_estimated_from_its_cpu_time(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    image = documents.text_image(["Invoice 4711 for Jane Doe"])
    answer = await http.post(
        "/v1/ocr", files={"file": ("scan.png", image)}, data={"model": "local"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    await gateway.state.usage.flush()
    (found,) = await gateway.state.db.run(
        lambda d: list(
            d.query("SELECT provider, latency_ms, energy_kwh, carbon_gco2e FROM usage_records")
        )
    )
    factors = load_footprint_factors()
    # one core at the table's per-core power for the measured time, PUE 1.0, world grid
    energy = found["latency_ms"] / 1000 / 3600 * factors.cpu_core_power_w / 1000
    assert found["provider"] == "local"
    assert found["energy_kwh"] == pytest.approx(energy) and energy > 0
    assert found["carbon_gco2e"] == pytest.approx(energy * factors.intensity("world"))
