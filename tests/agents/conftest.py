"""A whole gateway (as in tests/gateway) for the agent tests, with a local webhook
receiver let through the SSRF guard for limit-warning alerts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio
from openai.types.chat import ChatCompletion

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY, gateway, gateway_settings, http
from tests.status.receivers import WebhookReceiver

__all__ = ["ADMIN_KEY", "gateway", "http"]

Create = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
async def receiver(nursery: trio.Nursery) -> WebhookReceiver:
    hook = WebhookReceiver()
    await nursery.start(hook.serve)
    return hook


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return gateway_settings(
        tmp_path,
        health_probe_interval_s=0,
        incident_check_interval_s=0,
        alert_eval_interval_s=0,
        webhook_allowed_hosts="127.0.0.1",
        webhook_retry_base_s=0.01,
    )


@pytest.fixture
def create_agent(http: httpx.AsyncClient) -> Create:
    """POST /v1/mcp/agents with the admin key; the created agent (201 asserted)."""

    async def create(**body: Any) -> dict[str, Any]:
        body.setdefault("name", "night-crawler")
        response = await http.post("/v1/mcp/agents", json=body)
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    return create


def agent_client(
    gateway: RunningGateway, key: str, session: str | None = None
) -> httpx.AsyncClient:
    headers = {"authorization": f"Bearer {key}"}
    if session is not None:
        headers["x-agent-session"] = session
    return httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30)


async def agent_chat(
    gateway: RunningGateway, key: str, session: str, content: str = "Hi", max_tokens: int = 20
) -> ChatCompletion:
    """One short chat request of the agent's, in `session`, through the official client."""
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1",
        api_key=key,
        max_retries=0,
        default_headers={"X-Agent-Session": session},
    ) as client:
        return await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": content}],
            max_tokens=max_tokens,
        )
