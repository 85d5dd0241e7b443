"""Agent changes made on one gateway reach another sharing the store and Redis: an
organisation's new limits and a suspension apply there within a second."""

from __future__ import annotations

import httpx
import trio

from gateway.app.server import RunningGateway
from tests.gateway.conftest import ADMIN_KEY
from tests.scaleout.helpers import CHAT_BODY
from tests.scaleout.test_shared_limits import pair

__all__ = ["pair"]


async def until(http: httpx.AsyncClient, url: str, status: int) -> httpx.Response:
    """Chat requests on `url` until one answers `status` (at most a second)."""
    with trio.fail_after(1.0):
        n = 0
        while True:
            body = CHAT_BODY | {"messages": [{"role": "user", "content": f"Hi {n}"}]}
            answer = await http.post(url + "/v1/chat/completions", json=body)
            if answer.status_code == status:
                return answer
            assert answer.status_code == 200, answer.text
            n += 1


async def test_organisation_limits_and_suspension_reach_the_other_gateway(
    pair: list[RunningGateway],
) -> None:
    first, second = pair
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=first.url, headers=admin, timeout=30) as manage:
        created = await manage.post("/v1/mcp/agents", json={"name": "roamer"})
        assert created.status_code == 201, created.text
        agent = created.json()
        async with httpx.AsyncClient(
            headers={"authorization": f"Bearer {agent['key']}"}, timeout=30
        ) as me:
            # The second gateway has read (and cached) the agent with no rpm ceiling
            # below 300.
            ok = await me.post(second.url + "/v1/chat/completions", json=CHAT_BODY)
            assert ok.status_code == 200, ok.text
            put = await manage.put("/v1/management/agent-limits", json={"requests_per_minute": 2})
            assert put.status_code == 200, put.text
            refused = await until(me, second.url, 429)
            assert refused.json()["error"]["code"] == "rpm_exceeded"
            assert refused.json()["error"]["limit"] == 2

            put = await manage.put("/v1/management/agent-limits", json={})
            assert put.status_code == 200, put.text
            suspended = await manage.post(f"/v1/mcp/agents/{agent['id']}/suspend", json={})
            assert suspended.status_code == 200, suspended.text
            stopped = await until(me, second.url, 403)
            assert stopped.json()["error"]["code"] == "agent_suspended"
