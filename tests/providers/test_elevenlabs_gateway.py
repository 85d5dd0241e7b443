"""ElevenLabs through the whole gateway in demo mode: configured against the simulator,
tested live through the management API, and reported healthy.

The gateway fixtures are the gateway suite's own (`tests/gateway/conftest.py`), bound
here by name so that this file runs the same in-process gateway.
"""

from __future__ import annotations

import httpx

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway import conftest as gateway_fixtures

settings = gateway_fixtures.settings
gateway = gateway_fixtures.gateway
http = gateway_fixtures.http

PROVIDERS = "/v1/management/providers"
CATALOG_MODELS = ["eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2_5"]


async def test_demo_mode_configures_elevenlabs(http: httpx.AsyncClient) -> None:
    detail = (await http.get(f"{PROVIDERS}/elevenlabs")).json()
    assert detail["configured"] is True
    assert detail["status"] == "active"
    assert detail["settings"]["base_url"].endswith("/elevenlabs")
    assert {m["id"] for m in detail["models"] if m["available"]} == set(CATALOG_MODELS)


async def test_live_test_lists_the_models_and_health_is_healthy(http: httpx.AsyncClient) -> None:
    response = await http.post(f"{PROVIDERS}/elevenlabs/test")
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["id"] == "elevenlabs"
    assert result["test_result"] == "success", result
    assert result["models_available"] == CATALOG_MODELS
    assert isinstance(result["latency_ms"], int) and result["latency_ms"] >= 0

    health = (await http.get(f"{PROVIDERS}/health")).json()["providers"]
    entry = health["elevenlabs"]
    assert entry["status"] == "healthy"
    assert entry["last_error"] is None
    assert entry["samples"] >= 1


async def test_a_refused_key_fails_the_live_test(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="*", vendor="elevenlabs", status=401, remaining=1))
    result = (await http.post(f"{PROVIDERS}/elevenlabs/test")).json()
    assert result["test_result"] == "failure"
    assert result["models_available"] == []
    assert result["error"] == {"type": "AuthenticationFailed", "message": "Invalid API key"}
    health = (await http.get(f"{PROVIDERS}/health")).json()["providers"]["elevenlabs"]
    assert health["last_error"]["type"] == "AuthenticationFailed"
