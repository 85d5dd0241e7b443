"""Any valid key reads its own limits over HTTP; only management sees the providers'
(issue 22, item 6)."""

from __future__ import annotations

import httpx

from gateway.app.server import RunningGateway

PATH = "/v1/management/rate-limits"


async def test_a_chat_only_key_sees_its_own_limits(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await http.post(
        "/v1/management/api-keys",
        json={"name": "app", "permissions": ["chat"], "rate_limits": {"rpm": 30}},
    )
    assert created.status_code == 201, created.text
    secret = created.json()["key"]
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {secret}"}, timeout=10
    ) as mine:
        response = await mine.get(PATH)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"api_key"}
    assert body["api_key"]["id"] == created.json()["id"]
    assert body["api_key"]["rpm"]["limit"] == 30
    assert set(body["api_key"]) >= {"rpm", "tpm", "daily"}


async def test_a_management_key_also_sees_the_providers(http: httpx.AsyncClient) -> None:
    response = await http.get(PATH)
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"api_key", "providers"}
    assert response.json()["providers"]


async def test_no_key_is_a_401(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        response = await anonymous.get(PATH)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
