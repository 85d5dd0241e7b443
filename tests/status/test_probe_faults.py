"""Every simulated vendor's model list (what the health probes call) obeys the simulator's
fault controls, so driving any provider down opens an incident naming it, and bringing it
back resolves that incident."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.status import incident_monitor
from gateway.workers.health_probes import probe_round
from providers.sim.faults import MODEL_LIST

VENDORS = ("openai", "anthropic", "google", "mistral", "cohere", "elevenlabs")


async def probe(gateway: RunningGateway, rounds: int) -> None:
    for _ in range(rounds):
        await probe_round(gateway.state.probes)
    await incident_monitor.check(gateway.state.status_services, datetime.now(UTC))


async def open_incidents(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    page: dict[str, Any] = (await http.get("/v1/status")).json()
    return list(page["incidents"])


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_vendor_down_in_the_simulator_opens_an_incident(
    gateway: RunningGateway, http: httpx.AsyncClient, vendor: str
) -> None:
    assert gateway.sim is not None
    assert vendor in gateway.providers
    await probe(gateway, 3)
    assert await open_incidents(http) == []

    control = f"http://{gateway.sim.host}:{gateway.sim.port}/_sim/faults"
    async with httpx.AsyncClient(timeout=10) as sim:
        fault = {"model": MODEL_LIST, "vendor": vendor, "status": 503}
        assert (await sim.post(control, json=fault)).status_code == 201
        await probe(gateway, 3)
        incidents = await open_incidents(http)
        assert [i["affected_services"] for i in incidents] == [[vendor]]
        assert incidents[0]["severity"] == "major"
        page = (await http.get("/v1/status")).json()
        statuses = {s["name"]: s["status"] for s in page["services"]}
        assert statuses[vendor] == "partial_outage"
        assert {s for n, s in statuses.items() if n not in (vendor, "api")} <= {"operational"}

        assert (await sim.delete(control)).json() == {"cleared": 1}
    await probe(gateway, 2)
    assert await open_incidents(http) == []
