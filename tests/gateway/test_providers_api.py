"""The provider management endpoints, through HTTP, against the in-process simulator.

In demo mode every vendor with an adapter is configured in the default workspace and
points at the simulator; the tests reconfigure, break and repair them from there.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from providers.sim.core import Fault
from store import audit, keys, workspaces
from store.secrets import new_api_key
from store.workspaces import WorkspaceRecord

PROVIDERS = "/v1/management/providers"
ALL_PROVIDERS = {"openai", "anthropic", "google", "mistral", "cohere", "elevenlabs", "local"}
SECRET = "sk-live-DO-NOT-LEAK-4f9c2a7e1b"
CHAT_BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    assert error["message"] and error["type"] and error["doc_url"]
    return error


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def recent(value: str) -> bool:
    return abs(parse_time(value) - datetime.now(UTC)) < timedelta(seconds=10)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port bound but not listening: connections to it are refused, and no one
    else can take it while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def sim_url(http: httpx.AsyncClient, provider_id: str) -> str:
    """Where the demo configuration points this provider (the simulator)."""
    url: str = (await http.get(f"{PROVIDERS}/{provider_id}")).json()["settings"]["base_url"]
    assert url.startswith("http://127.0.0.1:")
    return url


async def chat(http: httpx.AsyncClient, **extra: Any) -> httpx.Response:
    """A chat request with a prompt of its own, so that no cached answer stands in for
    the provider."""
    messages = [{"role": "user", "content": f"Hello {uuid.uuid4()}"}]
    return await http.post("/v1/chat/completions", json=CHAT_BODY | {"messages": messages} | extra)


# -- list and detail -----------------------------------------------------------------------


async def test_list_shows_all_six_providers_with_demo_configuration(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    response = await http.get(PROVIDERS)
    assert response.status_code == 200
    listed = {p["id"]: p for p in response.json()["providers"]}
    assert set(listed) == ALL_PROVIDERS
    configured = {pid for pid, p in listed.items() if p["configured"]}
    assert configured == set(gateway.providers)
    assert {"openai", "anthropic"} <= configured
    for pid, entry in listed.items():
        assert entry["name"]
        assert entry["models"] and all(isinstance(m, str) for m in entry["models"])
        if pid in configured:
            assert entry["status"] == "active"
            assert recent(entry["configured_at"])
            assert entry["health"]["status"] in ("healthy", "degraded")
        else:
            assert entry["status"] == "inactive"
            assert entry["configured_at"] is None
            assert entry["health"] is None
    assert "gpt-4o-mini" in listed["openai"]["models"]


async def test_detail_has_model_objects_health_and_usage(http: httpx.AsyncClient) -> None:
    assert (await chat(http)).status_code == 200
    response = await http.get(f"{PROVIDERS}/openai")
    assert response.status_code == 200
    detail = response.json()
    assert detail["id"] == "openai" and detail["configured"] is True
    models = {m["id"]: m for m in detail["models"]}
    assert models["gpt-5.4-mini"] == {"id": "gpt-5.4-mini", "type": "chat", "available": True}
    assert models["text-embedding-3-small"]["type"] == "embedding"
    health = detail["health"]
    assert health["status"] == "healthy"
    assert 0 <= health["uptime_30d"] <= 1
    assert health["last_error"] is None
    assert recent(health["last_check"])
    assert detail["usage"]["requests_today"] == 1
    assert detail["usage"]["tokens_today"] > 0
    assert detail["usage"]["cost_today_usd"] > 0


async def unconfigure(http: httpx.AsyncClient, provider: str) -> None:
    """Demo mode configures every vendor; remove one to have an unconfigured provider."""
    assert (await http.delete(f"{PROVIDERS}/{provider}")).status_code == 200


async def test_detail_of_an_unconfigured_provider(http: httpx.AsyncClient) -> None:
    await unconfigure(http, "elevenlabs")
    detail = (await http.get(f"{PROVIDERS}/elevenlabs")).json()
    assert detail["configured"] is False
    assert detail["health"] is None
    assert detail["models"] and not any(m["available"] for m in detail["models"])


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/credentials"),
        ("POST", "/test"),
        ("POST", "/disable"),
        ("POST", "/enable"),
    ],
)
async def test_unknown_provider_ids_give_404(
    http: httpx.AsyncClient, method: str, suffix: str
) -> None:
    response = await http.request(
        method, f"{PROVIDERS}/acme{suffix}", json={"api_key": "x", "settings": {}}
    )
    error = assert_error(response, 404, "provider_not_found")
    assert error["type"] == "not_found_error"


# -- configure -----------------------------------------------------------------------------


async def test_configure_returns_the_configuration_without_credentials(
    gateway: RunningGateway, http: httpx.AsyncClient, settings: Settings
) -> None:
    base_url = await sim_url(http, "openai")
    response = await http.post(
        PROVIDERS,
        json={
            "provider": "openai",
            "credentials": {"api_key": SECRET, "organization": "org-secret-xyz"},
            "settings": {"base_url": base_url, "organization_id": "org-1"},
        },
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["id"] == "openai"
    assert body["name"] == "OpenAI"
    assert body["status"] == "active"
    assert body["configured"] is True
    assert recent(body["configured_at"])
    assert "gpt-4o-mini" in body["models"]
    # It is live, and the secret shows up nowhere a client or an operator can read.
    assert (await chat(http)).status_code == 200
    seen = [response.text]
    for path in (PROVIDERS, f"{PROVIDERS}/openai", f"{PROVIDERS}/health"):
        seen.append((await http.get(path)).text)
    seen.append((await http.post(f"{PROVIDERS}/openai/test")).text)
    for text in seen:
        assert SECRET not in text
        assert "org-secret-xyz" not in text
    stored = b"".join(
        p.read_bytes() for p in settings.data_dir.iterdir() if p.name.startswith("gateway.db")
    )
    assert b"org-1" in stored  # the settings are stored in clear, the credentials not
    assert SECRET.encode() not in stored
    assert b"org-secret-xyz" not in stored
    events = await gateway.state.db.run(lambda d: audit.list_events(d, "default"))
    configured = [e for e in events if e.type == "provider.configured"]
    assert [e.target_id for e in configured] == ["openai"]
    assert SECRET not in repr(configured)


async def test_configure_a_provider_that_was_not_configured(http: httpx.AsyncClient) -> None:
    response = await http.post(
        PROVIDERS, json={"provider": "elevenlabs", "credentials": {"api_key": SECRET}}
    )
    assert response.status_code == 201, response.text
    assert response.json()["configured"] is True
    listed = {p["id"]: p for p in (await http.get(PROVIDERS)).json()["providers"]}
    assert listed["elevenlabs"]["configured"] is True
    assert SECRET not in (await http.get(f"{PROVIDERS}/elevenlabs")).text


OK_CREDENTIALS = {"api_key": "k"}
BAD_BASE_URLS = [
    "ftp://example.com",
    "example.com/v1",
    80,
    "http://[::1/v1",
    "http://127.0.0.1:abc/v1",
    "http://127.0.0.1:70000/v1",
    "http:///v1",
]


def base_url_code(url: object) -> str:
    """An http(s) URL the HTTP client cannot use is refused for its meaning; anything else
    for its shape (the document's pattern)."""
    well_formed = isinstance(url, str) and url.lower().startswith(("http://", "https://"))
    return "invalid_configuration" if well_formed else "invalid_request"


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        pytest.param(
            {"credentials": OK_CREDENTIALS}, 400, "invalid_request", "provider", id="no-provider"
        ),
        pytest.param(
            {"provider": 7, "credentials": OK_CREDENTIALS},
            400,
            "invalid_request",
            "provider",
            id="provider-number",
        ),
        pytest.param(
            {"provider": "openai"}, 400, "invalid_request", "credentials", id="no-credentials"
        ),
        pytest.param(
            {"provider": "openai", "credentials": "k"},
            400,
            "invalid_request",
            "credentials",
            id="credentials-string",
        ),
        pytest.param(
            {"provider": "openai", "credentials": OK_CREDENTIALS, "settings": []},
            400,
            "invalid_request",
            "settings",
            id="settings-array",
        ),
    ]
    + [
        pytest.param(
            {"provider": "openai", "credentials": {"api_key": key}},
            422,
            "invalid_credentials",
            "credentials.api_key",
            id=f"api-key-{key!r}",
        )
        for key in (None, "", "   ", 12)
    ]
    + [
        pytest.param(
            {"provider": "openai", "credentials": OK_CREDENTIALS, "settings": {"base_url": url}},
            400,
            base_url_code(url),
            "settings.base_url",
            id=f"base-url-{url}",
        )
        for url in BAD_BASE_URLS
    ]
    + [
        pytest.param(
            {"provider": "openai", "credentials": OK_CREDENTIALS, "settings": {name: value}},
            400,
            "invalid_configuration"
            if name == "default_model" and isinstance(value, str)
            else "invalid_request",
            f"settings.{name}",
            id=f"{name}-{value!r}",
        )
        for name, value in (
            ("default_model", "no-such-model"),
            ("default_model", "claude-haiku-4-5"),  # another vendor's
            ("default_model", 4),
            ("organization_id", 5),
            ("organization_id", ""),
            ("default_voice", ["alloy"]),
        )
    ],
)
async def test_configure_rejects_bad_bodies_and_keeps_the_old_configuration(
    http: httpx.AsyncClient, body: dict[str, Any], status: int, code: str, param: str
) -> None:
    before = (await http.get(f"{PROVIDERS}/openai")).json()
    error = assert_error(await http.post(PROVIDERS, json=body), status, code)
    assert error["param"] == param
    after = (await http.get(f"{PROVIDERS}/openai")).json()
    assert after["configured_at"] == before["configured_at"]
    assert after["settings"] == before["settings"]
    assert (await chat(http)).status_code == 200


async def test_configure_unknown_provider_gives_404(http: httpx.AsyncClient) -> None:
    response = await http.post(
        PROVIDERS, json={"provider": "acme", "credentials": {"api_key": "k"}}
    )
    error = assert_error(response, 404, "provider_not_found")
    assert "openai" in error["available_providers"]


# -- settings and credentials --------------------------------------------------------------


async def test_patch_settings_merges_and_null_removes(http: httpx.AsyncClient) -> None:
    base_url = await sim_url(http, "openai")
    response = await http.patch(
        f"{PROVIDERS}/openai",
        json={"settings": {"default_model": "gpt-4o", "organization_id": "o"}},
    )
    assert response.status_code == 200, response.text
    settings = (await http.get(f"{PROVIDERS}/openai")).json()["settings"]
    assert settings == {"base_url": base_url, "default_model": "gpt-4o", "organization_id": "o"}
    response = await http.patch(f"{PROVIDERS}/openai", json={"settings": {"organization_id": None}})
    assert response.status_code == 200, response.text
    settings = (await http.get(f"{PROVIDERS}/openai")).json()["settings"]
    assert settings == {"base_url": base_url, "default_model": "gpt-4o"}
    assert (await chat(http)).status_code == 200


async def test_patch_checks_the_default_model_against_the_providers_own(
    http: httpx.AsyncClient,
) -> None:
    before = (await http.get(f"{PROVIDERS}/openai")).json()["settings"]
    refused = await http.patch(
        f"{PROVIDERS}/openai", json={"settings": {"default_model": "mistral-large-latest"}}
    )
    error = assert_error(refused, 400, "invalid_configuration")
    assert error["param"] == "settings.default_model"
    assert (await http.get(f"{PROVIDERS}/openai")).json()["settings"] == before
    alias = await http.patch(
        f"{PROVIDERS}/openai", json={"settings": {"default_model": "gpt-4o-2024-08-06"}}
    )
    assert alias.status_code == 200, alias.text


async def test_patch_base_url_redirects_traffic(http: httpx.AsyncClient, closed_port: int) -> None:
    base_url = await sim_url(http, "openai")
    broken = await http.patch(
        f"{PROVIDERS}/openai", json={"settings": {"base_url": f"http://127.0.0.1:{closed_port}/v1"}}
    )
    assert broken.status_code == 200, broken.text
    failed = await chat(http, provider="openai")  # forced: no fallback to another vendor
    assert 500 <= failed.status_code < 600
    assert failed.json()["error"]["type"] == "provider_error"
    assert failed.json()["error"]["provider"] == "openai"
    repaired = await http.patch(f"{PROVIDERS}/openai", json={"settings": {"base_url": base_url}})
    assert repaired.status_code == 200
    assert (await chat(http)).status_code == 200


@pytest.mark.parametrize(
    "base_url",
    ["file:///etc/passwd", "http://127.0.0.1:port/v1", "http://[::1", "http://xn--zz/", "", 8080],
)
async def test_patch_rejects_a_bad_base_url_and_keeps_settings(
    http: httpx.AsyncClient, base_url: object
) -> None:
    before = (await http.get(f"{PROVIDERS}/openai")).json()["settings"]
    response = await http.patch(
        f"{PROVIDERS}/openai", json={"settings": {"base_url": base_url, "x": 1}}
    )
    error = assert_error(response, 400, base_url_code(base_url))
    assert error["param"] == "settings.base_url"
    assert (await http.get(f"{PROVIDERS}/openai")).json()["settings"] == before
    assert (await chat(http)).status_code == 200


async def test_patch_of_an_unconfigured_provider_gives_404(http: httpx.AsyncClient) -> None:
    await unconfigure(http, "elevenlabs")
    response = await http.patch(f"{PROVIDERS}/elevenlabs", json={"settings": {"x": 1}})
    assert_error(response, 404, "provider_not_found")


async def test_credentials_update(http: httpx.AsyncClient, settings: Settings) -> None:
    before = (await http.get(f"{PROVIDERS}/openai")).json()
    response = await http.post(f"{PROVIDERS}/openai/credentials", json={"api_key": SECRET})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == "openai"
    assert body["status"] == "active"
    assert parse_time(body["credentials_updated_at"]) > parse_time(before["credentials_updated_at"])
    assert SECRET not in response.text
    after = (await http.get(f"{PROVIDERS}/openai")).json()
    assert after["credentials_updated_at"] == body["credentials_updated_at"]
    assert after["settings"] == before["settings"]
    assert (await chat(http)).status_code == 200
    stored = b"".join(
        p.read_bytes() for p in settings.data_dir.iterdir() if p.name.startswith("gateway.db")
    )
    assert SECRET.encode() not in stored


async def test_credentials_update_takes_the_configure_shape_too(http: httpx.AsyncClient) -> None:
    before = (await http.get(f"{PROVIDERS}/openai")).json()
    nested = {"credentials": {"api_key": SECRET}}
    response = await http.post(f"{PROVIDERS}/openai/credentials", json=nested)
    assert response.status_code == 200, response.text
    assert parse_time(response.json()["credentials_updated_at"]) > parse_time(
        before["credentials_updated_at"]
    )
    empty = await http.post(f"{PROVIDERS}/openai/credentials", json={"credentials": {}})
    assert_error(empty, 422, "invalid_credentials")
    assert (await chat(http)).status_code == 200


async def test_credentials_update_rejects_an_empty_key(http: httpx.AsyncClient) -> None:
    before = (await http.get(f"{PROVIDERS}/openai")).json()
    response = await http.post(f"{PROVIDERS}/openai/credentials", json={"api_key": ""})
    assert_error(response, 422, "invalid_credentials")
    after = (await http.get(f"{PROVIDERS}/openai")).json()
    assert after["credentials_updated_at"] == before["credentials_updated_at"]


# -- test, disable, enable, delete ---------------------------------------------------------


async def test_live_test_against_the_simulator(http: httpx.AsyncClient) -> None:
    response = await http.post(f"{PROVIDERS}/openai/test")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == "openai"
    assert body["test_result"] == "success"
    assert isinstance(body["latency_ms"], int) and body["latency_ms"] >= 0
    assert "gpt-4o-mini" in body["models_available"]
    assert recent(body["tested_at"])


async def test_live_test_reports_a_refused_connection(
    http: httpx.AsyncClient, closed_port: int
) -> None:
    await http.patch(
        f"{PROVIDERS}/openai", json={"settings": {"base_url": f"http://127.0.0.1:{closed_port}/v1"}}
    )
    response = await http.post(f"{PROVIDERS}/openai/test")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["test_result"] == "failure"
    assert body["models_available"] == []
    assert body["error"]["message"]
    health = (await http.get(f"{PROVIDERS}/health")).json()["providers"]["openai"]
    assert health["last_error"] is not None
    assert health["success_rate"] == 0


async def test_disable_then_enable(http: httpx.AsyncClient) -> None:
    response = await http.post(f"{PROVIDERS}/openai/disable")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == "openai"
    assert body["status"] == "disabled"
    assert recent(body["disabled_at"])
    detail = (await http.get(f"{PROVIDERS}/openai")).json()
    assert detail["status"] == "disabled"
    assert not any(m["available"] for m in detail["models"])

    # Its models fall back along their catalog chain (issue 22, item 3).
    response = await chat(http)
    assert response.status_code == 200, response.text
    assert response.json()["service"]["provider"] != "openai"
    error = assert_error(await chat(http, provider="openai"), 400, "provider_not_configured")
    assert error["param"] == "provider"
    assert (await http.post(f"{PROVIDERS}/openai/test")).json()["test_result"] == "failure"
    # Other providers are unaffected.
    assert (await chat(http, model="claude-sonnet-4-5")).status_code == 200

    response = await http.post(f"{PROVIDERS}/openai/enable")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "active"
    detail = (await http.get(f"{PROVIDERS}/openai")).json()
    assert detail["status"] == "active"
    assert detail["disabled_at"] is None
    assert (await chat(http)).status_code == 200
    assert (await chat(http, provider="openai")).status_code == 200


async def test_disable_and_enable_need_a_configuration(http: httpx.AsyncClient) -> None:
    await unconfigure(http, "elevenlabs")
    for action in ("disable", "enable", "test"):
        response = await http.post(f"{PROVIDERS}/elevenlabs/{action}")
        assert_error(response, 404, "provider_not_found")


async def test_delete_removes_the_configuration(http: httpx.AsyncClient) -> None:
    base_url = await sim_url(http, "openai")
    response = await http.delete(f"{PROVIDERS}/openai")
    assert response.status_code == 200, response.text
    detail = (await http.get(f"{PROVIDERS}/openai")).json()
    assert detail["configured"] is False
    assert detail["status"] == "inactive"
    assert detail["health"] is None
    assert detail["settings"] == {}
    error = assert_error(await chat(http), 404, "model_not_found")
    assert error["provider"] == "openai"
    assert "openai" not in (await http.get(f"{PROVIDERS}/health")).json()["providers"]
    assert_error(await http.delete(f"{PROVIDERS}/openai"), 404, "provider_not_found")
    # Configured again, it serves again.
    again = await http.post(
        PROVIDERS,
        json={
            "provider": "openai",
            "credentials": {"api_key": SECRET},
            "settings": {"base_url": base_url},
        },
    )
    assert again.status_code == 201, again.text
    assert (await chat(http)).status_code == 200


# -- live health ---------------------------------------------------------------------------


async def test_health_reflects_successes_and_a_failure(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    for _ in range(3):
        assert (await chat(http)).status_code == 200
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500, remaining=1))
    failed = await chat(http, provider="openai")  # forced: no fallback to another vendor
    assert failed.status_code >= 500
    assert failed.json()["error"]["type"] == "provider_error"
    assert (await chat(http)).status_code == 200

    response = await http.get(f"{PROVIDERS}/health")
    assert response.status_code == 200
    figures = response.json()["providers"]
    assert set(figures) == set(gateway.providers)
    openai_health = figures["openai"]
    assert openai_health["success_rate"] == pytest.approx(4 / 5)
    assert openai_health["latency_ms"] is not None
    assert openai_health["last_error"]["type"]
    assert recent(openai_health["last_error"]["time"])
    assert figures["anthropic"]["last_error"] is None
    detail = (await http.get(f"{PROVIDERS}/openai")).json()
    assert detail["health"]["last_error"] is not None
    assert detail["health"]["uptime_30d"] == pytest.approx(4 / 5)


async def test_health_shows_a_disabled_provider(http: httpx.AsyncClient) -> None:
    await http.post(f"{PROVIDERS}/mistral/disable")
    figures = (await http.get(f"{PROVIDERS}/health")).json()["providers"]
    assert figures["mistral"]["status"] == "disabled"
    assert figures["openai"]["status"] == "healthy"


# -- workspace isolation -------------------------------------------------------------------


async def foreign_manager(gateway: RunningGateway) -> str:
    """A management key of a second workspace, written straight to the store."""
    now = datetime.now(UTC)
    workspace = WorkspaceRecord(name="other team", created_at=now)
    full_key = new_api_key("prod")
    record = keys.new_record(
        full_key,
        workspace_id=workspace.id,
        name="other manager",
        kind="prod",
        permissions=("chat", "models", "management"),
        now=now,
    )

    def write(d: Any) -> None:
        workspaces.insert(d, workspace)
        keys.insert(d, record)

    await gateway.state.db.run(write)
    return full_key


async def test_another_workspace_does_not_share_provider_configuration(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    base_url = await sim_url(http, "openai")
    other_key = await foreign_manager(gateway)
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {other_key}"}, timeout=10
    ) as other:
        listed = (await other.get(PROVIDERS)).json()["providers"]
        assert {p["id"] for p in listed} == ALL_PROVIDERS
        assert not any(p["configured"] for p in listed)
        detail = (await other.get(f"{PROVIDERS}/openai")).json()
        assert detail["configured"] is False
        assert detail["settings"] == {}
        assert detail["usage"]["requests_today"] == 0
        assert (await other.get(f"{PROVIDERS}/health")).json()["providers"] == {}
        health = (await other.get("/v1/health/detailed")).json()
        assert health["components"]["providers"] == {}

        error = assert_error(await chat(other), 404, "model_not_found")
        assert error["available_models"] == []
        error = assert_error(await chat(other, provider="openai"), 400, "provider_not_configured")
        for response in (
            await other.post(f"{PROVIDERS}/openai/disable"),
            await other.delete(f"{PROVIDERS}/openai"),
            await other.patch(f"{PROVIDERS}/openai", json={"settings": {"x": 1}}),
            await other.post(f"{PROVIDERS}/openai/credentials", json={"api_key": "k"}),
        ):
            assert_error(response, 404, "provider_not_found")

        # Its own configuration serves it, and changes nothing for the default workspace.
        configured = await other.post(
            PROVIDERS,
            json={
                "provider": "openai",
                "credentials": {"api_key": "theirs"},
                "settings": {"base_url": base_url, "default_model": "gpt-4o"},
            },
        )
        assert configured.status_code == 201, configured.text
        assert (await chat(other)).status_code == 200
        await other.post(f"{PROVIDERS}/openai/disable")
    assert (await chat(http)).status_code == 200
    mine = (await http.get(f"{PROVIDERS}/openai")).json()
    assert mine["status"] == "active"
    assert mine["settings"] == {"base_url": base_url}
    assert mine["usage"]["requests_today"] == 1
