"""The MCP server, proven with the official MCP Python SDK as the client: it initialises a
session over Streamable HTTP, lists the agent's tools and reads back the usage the agent
has just spent. Plus the transport's refusals, over plain HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gateway.app.server import RunningGateway
from providers.catalog import round_cost
from tests.agents.conftest import ADMIN_KEY, Create, agent_chat

USAGE_TOOL = "self_inspect/get_my_usage"


async def spend(gateway: RunningGateway, key: str, session: str) -> None:
    await agent_chat(gateway, key, session, "Plan the night's crawl.", max_tokens=30)


async def test_the_sdk_initialises_lists_tools_and_sees_what_the_agent_spent(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    agent = await create_agent(name="inspector", limits={"cost_daily": 1.0})
    await spend(gateway, agent["key"], "crawl-7")
    headers = {"Authorization": f"Bearer {agent['key']}", "X-Agent-Session": "crawl-7"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as transport_client,
        streamable_http_client(gateway.url + "/v1/mcp", http_client=transport_client) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
        assert initialized.server_info.name == "gateway-agents"
        assert initialized.capabilities.tools is not None
        listed = await session.list_tools()
        names = [tool.name for tool in listed.tools]
        assert USAGE_TOOL in names
        result = await session.call_tool(USAGE_TOOL, {})
        assert not result.is_error
        usage: dict[str, Any] = result.structured_content or {}
        text = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert text == usage
    spent = (await http.get(f"/v1/mcp/agents/{agent['id']}/usage?session=crawl-7")).json()
    assert usage["session"]["id"] == "crawl-7"
    assert usage["session"]["cost"] > 0
    assert usage["session"]["cost"] == spent["session"]["cost"]
    assert usage["daily"]["cost"] == spent["daily"]["cost"]
    assert usage["daily"]["remaining_budget"] == round_cost(1.0 - usage["daily"]["cost"])
    assert usage["limits"]["cost_daily"] == 1.0
    assert usage["warnings"] == []


async def test_tools_are_filtered_by_the_agents_permissions(
    gateway: RunningGateway, create_agent: Create
) -> None:
    agent = await create_agent(name="narrow", permissions={"tools": ["self_inspect/get_my_limits"]})
    headers = {"Authorization": f"Bearer {agent['key']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as transport_client,
        streamable_http_client(gateway.url + "/v1/mcp", http_client=transport_client) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert [tool.name for tool in listed.tools] == ["self_inspect/get_my_limits"]
        limits = await session.call_tool("self_inspect/get_my_limits", {})
        assert (limits.structured_content or {})["limits"]["cost_daily"] == 1000.0


async def test_a_patch_changes_the_agents_tools(
    gateway: RunningGateway, http: httpx.AsyncClient, create_agent: Create
) -> None:
    """`permissions` was refused by PATCH: changing an agent's tools meant a new agent
    and a new key."""
    agent = await create_agent(
        name="widened", permissions={"tools": ["self_inspect/get_my_limits"]}
    )
    path = f"/v1/mcp/agents/{agent['id']}"
    patched = await http.patch(path, json={"permissions": {"tools": ["self_inspect/*"]}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["permissions"] == {"tools": ["self_inspect/*"]}
    bad = await http.patch(path, json={"permissions": {"tools": "self_inspect/*"}})
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "permissions.tools"
    assert bad.json()["error"]["value"] == "self_inspect/*"  # was null
    headers = {"Authorization": f"Bearer {agent['key']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as transport_client,
        streamable_http_client(gateway.url + "/v1/mcp", http_client=transport_client) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert USAGE_TOOL in [tool.name for tool in listed.tools]


async def post(gateway: RunningGateway, key: str, body: Any, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as raw:
        return await raw.post(
            "/v1/mcp",
            json=body,
            headers={
                "authorization": f"Bearer {key}",
                "accept": "application/json, text/event-stream",
                **headers,
            },
        )


def rpc(method: str, ident: int | None = 1, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return message


async def test_the_transport_negotiates_and_refuses_clearly(
    gateway: RunningGateway, create_agent: Create
) -> None:
    agent = await create_agent(name="raw", permissions={"tools": ["self_inspect/get_my_usage"]})
    key = agent["key"]
    not_agent = await post(gateway, ADMIN_KEY, rpc("initialize", protocolVersion="2025-06-18"))
    assert not_agent.status_code == 403
    assert not_agent.json()["error"]["code"] == "agent_key_required"
    old = await post(gateway, key, rpc("initialize", protocolVersion="2025-03-26"))
    assert old.json()["result"]["protocolVersion"] == "2025-03-26"
    unknown = await post(gateway, key, rpc("initialize", protocolVersion="1999-01-01"))
    assert unknown.json()["result"]["protocolVersion"] == "2025-11-25"
    session = unknown.headers["mcp-session-id"]
    no_session = await post(gateway, key, rpc("tools/list"))
    assert no_session.status_code == 400
    assert no_session.json()["error"]["code"] == "mcp_session_required"
    wrong = await post(gateway, key, rpc("tools/list"), **{"mcp-session-id": "nope"})
    assert wrong.status_code == 404
    other = await create_agent(name="other")
    foreign = await post(gateway, other["key"], rpc("tools/list"), **{"mcp-session-id": session})
    assert foreign.status_code == 404  # another agent's session is nobody's
    same = {"mcp-session-id": session}
    notified = await post(gateway, key, rpc("notifications/initialized", ident=None), **same)
    assert notified.status_code == 202
    missing = await post(gateway, key, rpc("resources/list"), **same)
    assert missing.json()["error"]["code"] == -32601
    hidden = await post(gateway, key, rpc("tools/call", name="self_inspect/get_my_limits"), **same)
    assert hidden.json()["error"]["code"] == -32602
    streamed = await post(gateway, key, rpc("ping"), accept="text/event-stream", **same)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert json.loads(streamed.text.split("data: ", 1)[1]) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {},
    }
    long = await post(
        gateway, key, rpc("tools/call", name=USAGE_TOOL, arguments={"session": "s" * 201}), **same
    )
    assert long.json()["error"]["code"] == -32602
    assert "at most 200 characters" in long.json()["error"]["message"]
    batch = await post(gateway, key, [rpc("ping")], **same)
    assert batch.status_code == 400
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as raw:
        ended = await raw.delete(
            "/v1/mcp", headers={"authorization": f"Bearer {key}", "mcp-session-id": session}
        )
        listening = await raw.get(
            "/v1/mcp", headers={"authorization": f"Bearer {key}", "accept": "text/event-stream"}
        )
    assert ended.status_code == 200
    assert listening.status_code == 405  # nothing is sent unprompted
    gone = await post(gateway, key, rpc("ping"), **same)
    assert gone.status_code == 404
