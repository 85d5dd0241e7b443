"""Per-session cost survives a restart: the usage log keeps each agent request's session,
and a new process reads a session's cost back when it first sees the session."""

from __future__ import annotations

from gateway.platform.config import Settings
from tests.agents.conftest import agent_client
from tests.gateway.test_monthly_limit_api import admin_http, running


def chat_body(n: int) -> dict[str, object]:
    return {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": f"restart job {n}"}],
        "max_tokens": 20,
    }


async def test_a_sessions_cost_and_its_limit_survive_a_restart(settings: Settings) -> None:
    async with running(settings) as first, admin_http(first) as http:
        created = await http.post("/v1/mcp/agents", json={"name": "durable-sessions"})
        assert created.status_code == 201, created.text
        agent = created.json()
        async with agent_client(first, agent["key"], session="job-7") as me:
            for n in range(2):
                answer = await me.post("/v1/chat/completions", json=chat_body(n))
                assert answer.status_code == 200, answer.text
        path = f"/v1/mcp/agents/{agent['id']}/usage?session=job-7"
        before = (await http.get(path)).json()["session"]["cost"]
        assert before > 0
        # A limit just above what the session spent: one more request is allowed.
        patched = await http.patch(
            f"/v1/mcp/agents/{agent['id']}", json={"limits": {"cost_per_session": before * 1.01}}
        )
        assert patched.status_code == 200, patched.text

    async with running(settings) as second, admin_http(second) as http:
        usage = (await http.get(path)).json()
        assert usage["session"]["cost"] == before
        assert usage["active_sessions"] == 0  # read back, not started
        async with agent_client(second, agent["key"], session="job-7") as me:
            one_more = await me.post("/v1/chat/completions", json=chat_body(2))
            assert one_more.status_code == 200, one_more.text
            refused = await me.post("/v1/chat/completions", json=chat_body(3))
        async with agent_client(second, agent["key"], session="job-8") as other:
            fresh = await other.post("/v1/chat/completions", json=chat_body(4))
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["limit_type"]) == ("cost_limit_exceeded", "cost_per_session")
    assert error["current"] > before
    assert fresh.status_code == 200, fresh.text  # another session has its own budget
