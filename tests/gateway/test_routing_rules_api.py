"""The routing-rule management endpoints, through HTTP."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import sqlite_utils

from gateway.app.server import RunningGateway
from store import audit, keys, workspaces
from store.secrets import KeyKind, new_api_key
from store.workspaces import WorkspaceRecord

RULES = "/v1/management/routing-rules"
UNKNOWN_ID = "rule_000000000000000000000000"
MESSAGES = [{"role": "user", "content": "Summarise the quarterly report in three lines."}]


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    assert error["message"] and error["type"] and error["doc_url"]
    return error


async def create_rule(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    payload = {"name": "rule", "conditions": {}, "actions": {"route_to": "gpt-4o-mini"}} | body
    response = await http.post(RULES, json=payload)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def parse_time(value: str) -> datetime:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert moment.tzinfo is not None
    return moment


# -- CRUD -------------------------------------------------------------------------------------


async def test_create_returns_the_rule(http: httpx.AsyncClient) -> None:
    conditions = {
        "models": ["gpt-4o*"],
        "api_keys": ["gw_prod_*"],
        "headers": {"X-Env": "prod"},
        "metadata": {"tier": "gold"},
        "time_range": {"start": "09:00", "end": "17:00", "timezone": "Europe/Paris"},
        "token_estimate": {"min": 1000},
    }
    actions = {
        "route_to": "claude-sonnet-4-5",
        "fallbacks": ["gpt-4o", "gemini-2.5-pro"],
        "retry": {"max_attempts": 3, "initial_delay_ms": 500},
        "cache": {"enabled": True, "ttl_seconds": 600},
        "transform": {"system_prompt": "Be concise."},
    }
    created = await create_rule(
        http, name="office hours", priority=5, conditions=conditions, actions=actions
    )
    assert created["id"].startswith("rule_")
    assert created["object"] == "routing_rule"
    assert (created["name"], created["priority"], created["enabled"]) == ("office hours", 5, True)
    assert created["conditions"] == conditions
    assert created["actions"] == actions
    assert parse_time(created["created_at"]) == parse_time(created["updated_at"])
    read = await http.get(f"{RULES}/{created['id']}")
    assert read.status_code == 200
    assert read.json() == created


async def test_list_is_ordered_by_priority(http: httpx.AsyncClient) -> None:
    assert (await http.get(RULES)).json()["rules"] == []
    late = await create_rule(http, name="late", priority=50)
    early = await create_rule(http, name="early", priority=1)
    parked = await create_rule(http, name="parked", priority=20, enabled=False)
    listed = (await http.get(RULES)).json()["rules"]
    assert [r["id"] for r in listed] == [early["id"], parked["id"], late["id"]]


async def test_default_priority_is_the_next_free_one(http: httpx.AsyncClient) -> None:
    assert (await create_rule(http))["priority"] == 10
    await create_rule(http, priority=42, enabled=False)
    assert (await create_rule(http))["priority"] == 52


async def test_patch_changes_and_revalidates(http: httpx.AsyncClient) -> None:
    created = await create_rule(http, name="a", priority=10)
    response = await http.patch(
        f"{RULES}/{created['id']}",
        json={"name": "b", "priority": 11, "conditions": {"models": ["claude-*"]}},
    )
    assert response.status_code == 200, response.text
    patched = response.json()
    assert (patched["name"], patched["priority"]) == ("b", 11)
    assert patched["conditions"] == {"models": ["claude-*"]}
    assert patched["actions"] == created["actions"]
    assert parse_time(patched["updated_at"]) >= parse_time(created["updated_at"])
    assert patched["created_at"] == created["created_at"]
    bad = await http.patch(f"{RULES}/{created['id']}", json={"conditions": {"models": []}})
    assert assert_error(bad, 400, "invalid_rule")["param"] == "conditions.models"
    empty = await http.patch(f"{RULES}/{created['id']}", json={})
    assert_error(empty, 400, "invalid_rule")
    unknown_model = await http.patch(
        f"{RULES}/{created['id']}", json={"actions": {"fallbacks": ["gpt-7"]}}
    )
    assert assert_error(unknown_model, 422, "invalid_model")["model"] == "gpt-7"
    assert (await http.get(f"{RULES}/{created['id']}")).json() == patched


async def test_delete(http: httpx.AsyncClient) -> None:
    created = await create_rule(http)
    response = await http.delete(f"{RULES}/{created['id']}")
    assert response.status_code == 200
    assert response.json() == {"id": created["id"], "object": "routing_rule", "deleted": True}
    assert_error(await http.get(f"{RULES}/{created['id']}"), 404, "rule_not_found")
    assert_error(await http.delete(f"{RULES}/{created['id']}"), 404, "rule_not_found")


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "", None),
        ("PATCH", "", {"name": "x"}),
        ("DELETE", "", None),
        ("POST", "/enable", None),
        ("POST", "/disable", None),
    ],
)
async def test_unknown_rule_is_404(
    http: httpx.AsyncClient, method: str, suffix: str, body: Any
) -> None:
    response = await http.request(method, f"{RULES}/{UNKNOWN_ID}{suffix}", json=body)
    assert_error(response, 404, "rule_not_found")


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"conditions": {}, "actions": {"cache": {}}}, "name"),
        ({"name": "r", "actions": {"cache": {}}}, "conditions"),
        ({"name": "r", "conditions": {}, "actions": {}}, "actions"),
        ({"name": "r", "conditions": {"colour": "red"}, "actions": {"cache": {}}}, None),
        (
            {
                "name": "r",
                "conditions": {"time_range": {"start": "09:00", "end": "17:00", "timezone": "X/Y"}},
                "actions": {"cache": {}},
            },
            "conditions.time_range.timezone",
        ),
        ({"name": "r", "conditions": {}, "actions": {"retry": {"max_attempts": 99}}}, None),
    ],
)
async def test_invalid_rule_is_400(
    http: httpx.AsyncClient, body: dict[str, Any], param: str | None
) -> None:
    error = assert_error(await http.post(RULES, json=body), 400, "invalid_rule")
    if param is not None:
        assert error["param"] == param
    assert (await http.get(RULES)).json()["rules"] == []


@pytest.mark.parametrize(
    ("actions", "model"),
    [({"route_to": "gpt-5-ultra"}, "gpt-5-ultra"), ({"fallbacks": ["gpt-4o", "nope"]}, "nope")],
)
async def test_unknown_model_is_422_naming_it(
    http: httpx.AsyncClient, actions: dict[str, Any], model: str
) -> None:
    response = await http.post(RULES, json={"name": "r", "conditions": {}, "actions": actions})
    error = assert_error(response, 422, "invalid_model")
    assert error["model"] == model
    assert model in error["message"]


async def test_conflicting_priority_is_409(http: httpx.AsyncClient) -> None:
    holder = await create_rule(http, name="holder", priority=10)
    response = await http.post(
        RULES, json={"name": "r", "priority": 10, "conditions": {}, "actions": {"cache": {}}}
    )
    error = assert_error(response, 409, "priority_conflict")
    assert error["conflicting_rule"] == {"id": holder["id"], "name": "holder"}
    other = await create_rule(http, priority=11)
    clash = await http.patch(f"{RULES}/{other['id']}", json={"priority": 10})
    assert_error(clash, 409, "priority_conflict")
    assert (await http.get(f"{RULES}/{other['id']}")).json()["priority"] == 11


async def test_disabled_rules_do_not_hold_a_priority(http: httpx.AsyncClient) -> None:
    """Documented choice: a parked rule keeps its priority but does not reserve it; enabling
    it while an enabled rule holds that priority is a 409."""
    parked = await create_rule(http, name="parked", priority=10, enabled=False)
    live = await create_rule(http, name="live", priority=10)
    assert_error(await http.post(f"{RULES}/{parked['id']}/enable"), 409, "priority_conflict")
    assert (await http.get(f"{RULES}/{parked['id']}")).json()["enabled"] is False
    await http.post(f"{RULES}/{live['id']}/disable")
    enabled = await http.post(f"{RULES}/{parked['id']}/enable")
    assert enabled.status_code == 200
    assert enabled.json()["enabled"] is True


# -- enable / disable -------------------------------------------------------------------------


async def test_enable_and_disable_follow_the_state_table(http: httpx.AsyncClient) -> None:
    created = await create_rule(http)
    rule_url = f"{RULES}/{created['id']}"
    disabled = await http.post(f"{rule_url}/disable")
    assert disabled.status_code == 200
    assert disabled.json()["enabled"] is False
    again = await http.post(f"{rule_url}/disable")  # idempotent
    assert again.json() == disabled.json()
    enabled = await http.post(f"{rule_url}/enable")
    assert enabled.json()["enabled"] is True
    assert (await http.get(rule_url)).json()["enabled"] is True


async def test_changes_are_audited(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    created = await create_rule(http)
    await http.post(f"{RULES}/{created['id']}/disable")
    await http.delete(f"{RULES}/{created['id']}")
    events = await gateway.state.db.run(lambda d: audit.list_events(d, "default"))
    kinds = [e.type for e in events if e.target_id == created["id"]]
    assert sorted(kinds) == [
        "routing_rule.created",
        "routing_rule.deleted",
        "routing_rule.disabled",
    ]


# -- permissions and workspaces ---------------------------------------------------------------


async def key_in(
    gateway: RunningGateway, workspace_id: str, kind: KeyKind, perms: list[str]
) -> tuple[str, str]:
    """A new key (secret, id) stored straight into `workspace_id`, created if needed."""
    full = new_api_key(kind)
    now = datetime.now(UTC)
    record = keys.new_record(
        full, workspace_id=workspace_id, name=kind, kind=kind, permissions=perms, now=now
    )

    def add(d: sqlite_utils.Database) -> None:
        if workspaces.get(d, workspace_id) is None:
            workspaces.insert(
                d, WorkspaceRecord(id=workspace_id, name=workspace_id, created_at=now)
            )
        keys.insert(d, record)

    await gateway.state.db.run(add)
    return full, record.id


async def test_management_permission_is_required(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        assert_error(await anonymous.get(RULES), 401, "invalid_api_key")
    chat_only, _ = await key_in(gateway, "default", "prod", ["chat"])
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {chat_only}"}, timeout=10
    ) as raw:
        assert_error(await raw.get(RULES), 403, "insufficient_permissions")
        assert_error(
            await raw.post(f"{RULES}/test", json={"model": "gpt-4o", "messages": MESSAGES}),
            403,
            "insufficient_permissions",
        )


async def test_another_workspace_sees_nothing(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    mine = await create_rule(http, priority=10)
    other_key, _ = await key_in(gateway, "ws_other", "admin", ["management"])
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {other_key}"}, timeout=10
    ) as other:
        assert (await other.get(RULES)).json()["rules"] == []
        for method, suffix in (("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "/disable")):
            response = await other.request(
                method, f"{RULES}/{mine['id']}{suffix}", json={"name": "x"}
            )
            assert_error(response, 404, "rule_not_found")
        # The same priority is free in another workspace.
        response = await other.post(
            RULES,
            json={"name": "theirs", "priority": 10, "conditions": {}, "actions": {"cache": {}}},
        )
        assert response.status_code == 201
        tested = await other.post(f"{RULES}/test", json={"model": "gpt-4o", "messages": MESSAGES})
        assert tested.json()["matched_rule"]["name"] == "theirs"
    assert (await http.get(f"{RULES}/{mine['id']}")).json()["enabled"] is True


# -- test endpoint ----------------------------------------------------------------------------


async def test_dry_run_reports_the_match_model_chain_and_cost(http: httpx.AsyncClient) -> None:
    await create_rule(
        http,
        name="gold to sonnet",
        priority=20,
        conditions={"metadata": {"tier": "gold"}},
        actions={"route_to": "claude-sonnet-4-5", "fallbacks": ["gpt-4o", "gemini-2.5-pro"]},
    )
    await create_rule(
        http, name="never", priority=10, conditions={"models": ["claude-*"]}, actions={"cache": {}}
    )
    response = await http.post(
        f"{RULES}/test",
        json={"model": "gpt-4o-mini", "messages": MESSAGES, "metadata": {"tier": "gold"}},
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["matched_rule"]["name"] == "gold to sonnet"
    assert result["resolved_model"] == "claude-sonnet-4-5"
    assert result["provider"] == "anthropic"
    assert result["fallback_chain"] == ["gpt-4o", "gemini-2.5-pro"]
    prompt = result["estimated_tokens"]["prompt"]
    assert result["estimated_tokens"]["completion"] == 256
    assert result["estimated_cost"] == pytest.approx((prompt * 3.0 + 256 * 15.0) / 1_000_000)
    assert [(e["name"], e["matched"]) for e in result["conditions_evaluated"]] == [
        ("never", False),
        ("gold to sonnet", True),
    ]
    assert result["conditions_evaluated"][0]["conditions"] == {"models": False}
    assert result["actions"]["route_to"] == "claude-sonnet-4-5"


async def test_dry_run_without_a_match_uses_the_catalog(http: httpx.AsyncClient) -> None:
    await create_rule(http, conditions={"metadata": {"tier": "gold"}})
    response = await http.post(
        f"{RULES}/test", json={"model": "gpt-4o", "messages": MESSAGES, "max_tokens": 1000}
    )
    result = response.json()
    assert result["matched_rule"] is None
    assert result["resolved_model"] == "gpt-4o"
    assert result["fallback_chain"] == ["claude-sonnet-5-5", "gemini-2.5-flash"]
    assert result["estimated_tokens"]["completion"] == 1000
    prompt = result["estimated_tokens"]["prompt"]
    assert result["estimated_cost"] == pytest.approx((prompt * 2.5 + 1000 * 10.0) / 1_000_000)


async def test_disabled_and_deleted_rules_stop_matching_at_once(http: httpx.AsyncClient) -> None:
    rule = await create_rule(http)
    body = {"model": "gpt-4o", "messages": MESSAGES}
    assert (await http.post(f"{RULES}/test", json=body)).json()["matched_rule"]["id"] == rule["id"]
    await http.post(f"{RULES}/{rule['id']}/disable")
    assert (await http.post(f"{RULES}/test", json=body)).json()["matched_rule"] is None
    await http.post(f"{RULES}/{rule['id']}/enable")
    assert (await http.post(f"{RULES}/test", json=body)).json()["matched_rule"] is not None
    await http.patch(f"{RULES}/{rule['id']}", json={"conditions": {"models": ["claude-*"]}})
    assert (await http.post(f"{RULES}/test", json=body)).json()["matched_rule"] is None
    await http.patch(f"{RULES}/{rule['id']}", json={"conditions": {}})
    await http.delete(f"{RULES}/{rule['id']}")
    assert (await http.post(f"{RULES}/test", json=body)).json()["matched_rule"] is None


async def test_dry_run_headers_key_and_time(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await create_rule(
        http,
        name="paris office, prod keys, eu header",
        conditions={
            "api_keys": ["gw_prod_*"],
            "headers": {"X-Region": "eu-*"},
            "time_range": {"start": "09:00", "end": "17:00", "timezone": "Europe/Paris"},
        },
        actions={"route_to": "mistral-large-latest"},
    )
    _, prod_id = await key_in(gateway, "default", "prod", ["chat"])
    body = {
        "model": "gpt-4o",
        "messages": MESSAGES,
        "headers": {"x-region": "eu-west"},
        "api_key_id": prod_id,
        "at": "2025-03-03T08:30:00Z",  # 09:30 in Paris
    }
    hit = (await http.post(f"{RULES}/test", json=body)).json()
    assert hit["resolved_model"] == "mistral-large-latest"
    late = (await http.post(f"{RULES}/test", json=body | {"at": "2025-03-03T16:30:00Z"})).json()
    assert late["matched_rule"] is None
    assert late["conditions_evaluated"][0]["conditions"] == {
        "api_keys": True,
        "headers": True,
        "time_range": False,
    }
    admin = (
        await http.post(f"{RULES}/test", json={k: v for k, v in body.items() if k != "api_key_id"})
    ).json()
    assert admin["matched_rule"] is None  # the caller's own key is gw_admin_
    missing = await http.post(f"{RULES}/test", json=body | {"api_key_id": "key_nope"})
    assert_error(missing, 404, "key_not_found")


async def test_dry_run_sees_the_calls_own_headers(http: httpx.AsyncClient) -> None:
    """A `headers` condition is matched against the test call's headers, as a chat call's
    would be; the body's `headers` extension overrides them."""
    await create_rule(
        http, conditions={"headers": {"X-Team": "search"}}, actions={"route_to": "gpt-4.1"}
    )
    body = {"model": "gpt-4o", "messages": MESSAGES}
    sent = await http.post(f"{RULES}/test", json=body, headers={"X-Team": "search"})
    assert sent.json()["resolved_model"] == "gpt-4.1"
    overridden = await http.post(
        f"{RULES}/test", json=body | {"headers": {"X-Team": "ads"}}, headers={"X-Team": "search"}
    )
    assert overridden.json()["matched_rule"] is None
    assert (await http.post(f"{RULES}/test", json=body)).json()["matched_rule"] is None


async def test_an_empty_transform_is_accepted_and_changes_nothing(
    http: httpx.AsyncClient,
) -> None:
    """The spec lists `transform` without its fields, so `{}` is a valid no-op."""
    rule = await create_rule(http, actions={"route_to": "gpt-4.1", "transform": {}})
    assert rule["actions"] == {"route_to": "gpt-4.1", "transform": {}}
    body = {"model": "gpt-4o", "messages": MESSAGES}
    run = (await http.post(f"{RULES}/test", json=body)).json()
    assert run["resolved_model"] == "gpt-4.1"
    assert run["request_changes"] == {}


async def test_dry_run_rejects_a_bad_body(http: httpx.AsyncClient) -> None:
    assert_error(
        await http.post(f"{RULES}/test", json={"messages": MESSAGES}), 400, "invalid_request"
    )
    assert_error(
        await http.post(
            f"{RULES}/test", json={"model": "gpt-4o", "messages": MESSAGES, "at": "noon"}
        ),
        400,
        "invalid_request",
    )
    assert_error(
        await http.post(
            f"{RULES}/test", json={"model": "gpt-4o", "messages": MESSAGES, "metadata": [1]}
        ),
        400,
        "invalid_request",
    )
    unknown = await http.post(f"{RULES}/test", json={"model": "gpt-9", "messages": MESSAGES})
    assert_error(unknown, 404, "model_not_found")


async def test_a_matching_rule_routes_chat_requests(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """A rule for one key prefix sends its requests elsewhere, with its own fallbacks."""
    await create_rule(
        http,
        name="admins to claude",
        conditions={"api_keys": ["gw_admin_*"], "models": ["gpt-4o*"]},
        actions={"route_to": "claude-haiku-4-5", "fallbacks": ["gemini-2.5-flash"]},
    )
    response = await http.post(
        "/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": MESSAGES}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-service-model-used"] == "anthropic/claude-haiku-4-5"
    routing = response.json()["_gateway"]
    assert routing["routing"]["model"] == "claude-haiku-4-5"
    assert routing["alternatives"] == [{"provider": "google", "model": "gemini-2.5-flash"}]

    forced = await http.post(
        "/v1/chat/completions",
        json={"model": "gpt-4o-mini", "messages": MESSAGES, "provider": "openai"},
    )
    assert forced.headers["x-service-model-used"] == "openai/gpt-4o-mini"


async def test_dry_run_falls_back_from_a_disabled_providers_model_as_chat_does(
    http: httpx.AsyncClient,
) -> None:
    assert (await http.post("/v1/management/providers/openai/disable")).status_code == 200
    tested = await http.post(f"{RULES}/test", json={"model": "gpt-4o", "messages": MESSAGES})
    assert tested.status_code == 200, tested.text
    run = tested.json()
    assert run["provider"] != "openai"
    chat = await http.post("/v1/chat/completions", json={"model": "gpt-4o", "messages": MESSAGES})
    assert chat.status_code == 200
    assert chat.json()["service"]["provider"] == run["provider"]
