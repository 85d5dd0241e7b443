"""Rate limits and the usage log can be switched off (to measure their cost, or where a
proxy in front enforces limits); everything else still works."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from store import usage

HELLO: Any = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, rate_limits_enabled=False, usage_log_enabled=False)


async def test_no_limits_and_no_usage_records_when_switched_off(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await http.post(
        "/v1/management/api-keys", json={"name": "tiny", "rate_limits": {"rpm": 1}}
    )
    key = created.json()["key"]
    for _ in range(3):  # an rpm of 1 would refuse the second one
        answer = await http.post(
            "/v1/chat/completions", json=HELLO, headers={"authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 200
        assert "x-ratelimit-limit-rpm" not in answer.headers
        assert answer.json()["choices"][0]["message"]["content"]
    await gateway.state.usage.flush()
    since = datetime(1970, 1, 1, tzinfo=UTC)
    totals = await gateway.state.db.run(lambda d: usage.totals_since(d, since=since))
    assert totals.requests == 0
