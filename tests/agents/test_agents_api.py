"""The agent management API: creation with templates and the key once, inheritance that
only lowers, update, usage, suspension and resumption (audited), deletion, isolation."""

from __future__ import annotations

import httpx

from gateway.agents.limits import INTEGER_LIMITS, LIMIT_NAMES
from gateway.app.server import RunningGateway
from providers.catalog import round_cost
from store import agents as agent_store
from tests.agents.conftest import ADMIN_KEY, Create, agent_chat, agent_client
from tests.gateway.org_world import bearer, build_world

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}


async def test_a_template_gives_the_spec_figures_and_the_key_is_shown_once(
    http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="free-one", template="Free", permissions={"tools": ["*"]})
    assert agent["key"].startswith("gw_agent_")
    assert agent["status"] == "active"
    assert agent["permissions"] == {"tools": ["*"]}
    limits = agent["limits"]
    assert limits["requests_per_minute"] == 10
    assert limits["cost_per_session"] == 0.5
    assert limits["cost_daily"] == 5.0
    assert limits["cost_monthly"] == 50.0
    assert limits["concurrent_sessions"] == 1
    assert limits["ocr_pages_daily"] is None  # the organisation sets none by default
    read = (await http.get(f"/v1/mcp/agents/{agent['id']}")).json()
    assert "key" not in read
    assert read["key_last_four"] == agent["key"][-4:]
    listed = (await http.get("/v1/mcp/agents")).json()["data"]
    assert [a["id"] for a in listed] == [agent["id"]]
    standard = await create_agent(limits="Standard")
    assert standard["limits"]["cost_daily"] == 100.0
    assert standard["template"] == "Standard"
    # An agent's key is managed through its agent, not among the workspace's API keys.
    keys = (await http.get("/v1/management/api-keys")).json()["data"]
    assert agent["key_id"] not in {k["id"] for k in keys}


async def test_limits_inherit_the_organisation_and_a_raise_is_refused_naming_it(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    inherited = await create_agent(name="inherits")
    assert inherited["limits"]["cost_daily"] == 1000.0  # the organisation's default
    refused = await http.post(
        "/v1/mcp/agents", json={"name": "greedy", "limits": {"cost_daily": 5000}}
    )
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "limit_above_organization"
    assert error["param"] == "limits.cost_daily"
    assert "cost_daily" in error["message"]
    # The organisation lowers its own ceiling: an agent may no longer ask for more.
    org = inherited["organization_limits"]
    await gateway.state.db.run(
        lambda d: agent_store.set_organization_limits(
            d,
            "org_default",
            {**{k: v for k, v in org.items() if v is not None}, "ocr_pages_daily": 100},
        )
    )
    too_many = await http.post(
        "/v1/mcp/agents", json={"name": "pages", "limits": {"ocr_pages_daily": 101}}
    )
    assert too_many.status_code == 400
    assert too_many.json()["error"]["param"] == "limits.ocr_pages_daily"
    lowered = await create_agent(name="pages", limits={"ocr_pages_daily": 10, "cost_daily": 2})
    assert lowered["limits"]["ocr_pages_daily"] == 10
    assert lowered["limits"]["cost_daily"] == 2.0
    raise_patch = await http.patch(
        f"/v1/mcp/agents/{lowered['id']}", json={"limits": {"cost_monthly": 10**6}}
    )
    assert raise_patch.status_code == 400
    assert raise_patch.json()["error"]["param"] == "limits.cost_monthly"


async def test_bad_bodies_are_400s_naming_the_field(http: httpx.AsyncClient) -> None:
    cases = [
        ({}, "name"),
        ({"name": "x", "limits": {"cost_hourly": 1}}, "limits.cost_hourly"),
        ({"name": "x", "limits": {"cost_daily": -1}}, "limits.cost_daily"),
        ({"name": "x", "limits": {"requests_per_minute": 1.5}}, "limits.requests_per_minute"),
        ({"name": "x", "template": "Gold"}, "template"),
        ({"name": "x", "permissions": {"tools": "all"}}, "permissions.tools"),
        ({"name": "x", "budget": 1}, "budget"),
        ({"name": "x", "auto_suspend": {"abuse_threshold": 0}}, "auto_suspend.abuse_threshold"),
    ]
    for body, param in cases:
        response = await http.post("/v1/mcp/agents", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["param"] == param, body
    flag = {"name": "x", "auto_suspend": {"on_cost_limit": "yes"}}
    error = (await http.post("/v1/mcp/agents", json=flag)).json()["error"]
    assert (error["param"], error["value"]) == ("auto_suspend.on_cost_limit", "yes")  # was null


async def test_patch_suspend_resume_delete_and_audit(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="worker")
    path = f"/v1/mcp/agents/{agent['id']}"
    patched = await http.patch(
        path,
        json={"limits": {"cost_daily": 3}, "auto_suspend": {"on_cost_limit": True}},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["limits"]["cost_daily"] == 3.0
    assert patched.json()["auto_suspend"] == {
        "on_cost_limit": True,
        "on_rpm_abuse": False,
        "abuse_threshold": 10,
    }
    async with agent_client(gateway, agent["key"]) as me:
        assert (await me.post("/v1/chat/completions", json=CHAT)).status_code == 200
        suspended = await http.post(f"{path}/suspend", json={"reason": "night shift over"})
        assert suspended.json()["status"] == "suspended"
        refused = await me.post("/v1/chat/completions", json=CHAT)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "agent_suspended"
        assert "night shift over" in refused.json()["error"]["message"]
        assert (await http.post(f"{path}/resume")).json()["status"] == "active"
        assert (await me.post("/v1/chat/completions", json=CHAT)).status_code == 200
        events = (await http.get("/v1/management/audit-log")).json()["events"]
        types = [e["type"] for e in events if e["target"].get("id") == agent["id"]]
        for kind in ("agent.created", "agent.updated", "agent.suspended", "agent.resumed"):
            assert kind in types, types
        deleted = await http.delete(path)
        assert deleted.json() == {"id": agent["id"], "object": "agent", "deleted": True}
        assert (await me.post("/v1/chat/completions", json=CHAT)).status_code == 401
    assert (await http.get(path)).status_code == 404


async def test_usage_counts_what_the_agent_spent_by_session(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="counted")
    answer = await agent_chat(gateway, agent["key"], "run-1")
    assert answer.choices[0].message.content
    usage = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
    assert usage["daily"]["cost"] > 0
    assert usage["daily"]["cost"] == usage["monthly"]["cost"]
    sessions = {s["id"]: s for s in usage["sessions"]}
    assert sessions["run-1"]["cost"] == usage["daily"]["cost"]
    assert usage["daily"]["remaining_budget"] == round_cost(1000.0 - usage["daily"]["cost"])
    assert usage["in_flight"] == 0


async def test_an_agent_reads_its_own_usage_with_its_key(
    gateway: RunningGateway, create_agent: Create
) -> None:
    """Agents use their key with their agent id: the usage route answered an agent key
    403 (it needs a manager's role); now the agent sees its own usage, and another
    agent's id is a 404 like an unknown one."""
    agent = await create_agent(name="self-reader")
    other = await create_agent(name="neighbour")
    async with agent_client(gateway, agent["key"], session="run-9") as me:
        spent = await me.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
        )
        assert spent.status_code == 200, spent.text
        own = await me.get(f"/v1/mcp/agents/{agent['id']}/usage", params={"session": "run-9"})
        foreign = await me.get(f"/v1/mcp/agents/{other['id']}/usage")
        details = await me.get(f"/v1/mcp/agents/{agent['id']}")
    assert own.status_code == 200, own.text
    usage = own.json()
    assert usage["agent_id"] == agent["id"] and usage["session"]["id"] == "run-9"
    assert usage["session"]["cost"] == usage["daily"]["cost"] > 0
    assert foreign.status_code == 404
    assert foreign.json()["error"]["code"] == "agent_not_found"
    assert details.status_code == 403  # only the usage: the rest stays the managers'


async def test_another_workspace_sees_no_agent(
    http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="mine")
    world = await build_world(http, ADMIN_KEY)
    other = bearer(world.other_key)  # an admin key of another workspace
    for method, suffix in (
        ("GET", ""),
        ("PATCH", ""),
        ("GET", "/usage"),
        ("POST", "/suspend"),
        ("POST", "/resume"),
        ("GET", "/alerts"),
        ("DELETE", ""),
    ):
        body: dict[str, object] | None = {} if method == "PATCH" else None
        foreign = await http.request(
            method, f"/v1/mcp/agents/{agent['id']}{suffix}", headers=other, json=body
        )
        unknown = await http.request(
            method, f"/v1/mcp/agents/agt_nope{suffix}", headers=other, json=body
        )
        assert foreign.status_code == 404, (method, suffix, foreign.text)
        assert foreign.text.replace(agent["id"], "<id>") == unknown.text.replace("agt_nope", "<id>")
    listed = (await http.get("/v1/mcp/agents", headers=other)).json()["data"]
    assert listed == []
    assert (await http.get(f"/v1/mcp/agents/{agent['id']}")).json()["status"] == "active"


async def test_a_restart_does_not_hand_out_a_fresh_budget(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="durable")
    async with agent_client(gateway, agent["key"]) as me:
        for n in range(3):
            body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"job {n}"}]}
            assert (await me.post("/v1/chat/completions", json=body)).status_code == 200
    before = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()["daily"]["cost"]
    assert before > 0
    # What a new process knows: nothing in memory; the spending comes from the usage log.
    gateway.state.agents.forget(agent["id"])
    after = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
    assert after["daily"]["cost"] == before
    assert after["monthly"]["cost"] == before


async def test_the_organisation_sets_the_ceilings_its_agents_inherit(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    defaults = (await http.get("/v1/management/agent-limits")).json()
    assert defaults["limits"]["cost_daily"] == 1000.0
    agent = await create_agent(name="child", limits={"cost_daily": 50})
    put = await http.put(
        "/v1/management/agent-limits",
        json={"cost_daily": 20, "requests_per_minute": 100, "audio_minutes_daily": 30},
    )
    assert put.status_code == 200, put.text
    assert put.json()["limits"]["cost_daily"] == 20.0
    assert put.json()["limits"]["cost_monthly"] is None  # absent: no limit
    read = (await http.get(f"/v1/mcp/agents/{agent['id']}")).json()
    assert read["limits"]["cost_daily"] == 20.0  # its override of 50 is above the new ceiling
    assert read["limits"]["audio_minutes_daily"] == 30.0
    assert read["limit_overrides"] == {"cost_daily": 50.0}
    refused = await http.post("/v1/mcp/agents", json={"name": "x", "limits": {"cost_daily": 21}})
    assert refused.json()["error"]["param"] == "limits.cost_daily"
    bad = await http.put("/v1/management/agent-limits", json={"cost_daily": "high"})
    assert bad.status_code == 400
    events = (await http.get("/v1/management/audit-log")).json()["events"]
    assert "agent_limits.updated" in [e["type"] for e in events]


async def test_the_session_header_is_the_usage_default_and_is_bounded(
    gateway: RunningGateway, create_agent: Create
) -> None:
    """An agent's own usage read named no session and showed `default` although the
    request's `X-Agent-Session` said otherwise (the MCP tool follows the header); a
    session name over 200 characters was cut, so two long names shared one budget."""
    agent = await create_agent(name="long-runner")
    async with agent_client(gateway, agent["key"], session="run-7") as me:
        spent = await me.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
        )
        assert spent.status_code == 200, spent.text
        own = (await me.get(f"/v1/mcp/agents/{agent['id']}/usage")).json()
        chosen = (
            await me.get(f"/v1/mcp/agents/{agent['id']}/usage", params={"session": "other"})
        ).json()
        long = await me.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
            headers={"X-Agent-Session": "s" * 201},
        )
    assert own["session"]["id"] == "run-7" and own["session"]["cost"] > 0
    assert chosen["session"] == {
        "id": "other",
        "cost": 0.0,
        "committed": 0.0,
        "remaining_budget": own["limits"]["cost_per_session"],
    }
    assert long.status_code == 400, long.text
    assert long.json()["error"]["param"] == "X-Agent-Session"


async def test_a_patch_applies_a_template_as_creation_does(
    http: httpx.AsyncClient, create_agent: Create
) -> None:
    """Creation takes `template` or `limits` naming one; a PATCH refused both (`limits`
    had to be an object), so moving an agent to another template meant every figure by
    hand."""
    agent = await create_agent(name="promoted", template="Free", limits={"cost_daily": 1})
    path = f"/v1/mcp/agents/{agent['id']}"
    standard = await http.patch(path, json={"limits": "Standard"})
    assert standard.status_code == 200, standard.text
    body = standard.json()
    assert body["template"] == "Standard"
    assert body["limit_overrides"] == {
        "requests_per_minute": 60,
        "cost_per_session": 5.0,
        "cost_daily": 100.0,
        "cost_monthly": 1000.0,
        "concurrent_sessions": 5,
    }
    tuned = await http.patch(path, json={"template": "Free", "limits": {"cost_daily": 2}})
    assert tuned.json()["template"] == "Free"
    assert tuned.json()["limits"]["cost_daily"] == 2.0
    assert tuned.json()["limits"]["requests_per_minute"] == 10
    unknown = await http.patch(path, json={"template": "Gold"})
    assert (unknown.status_code, unknown.json()["error"]["param"]) == (400, "template")


async def test_every_limit_is_declared_and_only_counted_ones_refuse_a_fraction(
    http: httpx.AsyncClient,
) -> None:
    """The organisation's limits body is the declared `AgentLimitsBody`: each limit name
    is known, a counted one takes 2.0 (an integer in JSON) but not 1.5, and the answer
    shows it whole."""
    for name in LIMIT_NAMES:
        fraction = await http.put("/v1/management/agent-limits", json={name: 1.5})
        if name in INTEGER_LIMITS:
            assert fraction.status_code == 400, name
            assert fraction.json()["error"]["param"] == name
            whole = await http.put("/v1/management/agent-limits", json={name: 2.0})
            assert whole.status_code == 200, (name, whole.text)
            shown = whole.json()["limits"][name]
            assert (shown, type(shown)) == (2, int), name
        else:
            assert fraction.status_code == 200, (name, fraction.text)
            assert fraction.json()["limits"][name] == 1.5
    above = await http.put("/v1/management/agent-limits", json={"cost_daily": 1e13})
    assert above.json()["error"]["param"] == "cost_daily"
