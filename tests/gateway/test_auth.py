"""Authentication and authorisation as a client meets them over HTTP.

Every refusal carries the spec's error envelope; the official `openai` client maps the
401 and 403 answers to its own exception types.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.conftest import ADMIN_KEY

CHAT_BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
KEYS = "/v1/management/api-keys"


def assert_envelope(response: httpx.Response, status: int, kind: str, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["type"] == kind
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert error["doc_url"].startswith("http")


async def create_key(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await http.post(KEYS, json={"name": "test", **body})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def chat_with(gateway: RunningGateway, key: str, **extra: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as raw:
        return await raw.post("/v1/chat/completions", json=CHAT_BODY | extra, headers=bearer(key))


async def get_with(gateway: RunningGateway, path: str, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as raw:
        return await raw.get(path, headers=headers)


# -- 401 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing-header"),
        pytest.param({"authorization": ""}, id="empty-header"),
        pytest.param({"authorization": f"Basic {ADMIN_KEY}"}, id="wrong-scheme"),
        pytest.param({"authorization": ADMIN_KEY}, id="no-scheme"),
        pytest.param({"authorization": "Bearer"}, id="scheme-only"),
        pytest.param({"authorization": "Bearer gw_admin_not_a_real_key_000000000"}, id="unknown"),
        pytest.param({"authorization": "Bearer sk-something-else"}, id="foreign-format"),
    ],
)
@pytest.mark.parametrize("path", [KEYS, "/v1/management/providers", "/v1/health/detailed"])
async def test_requests_without_a_valid_key_get_401(
    gateway: RunningGateway, headers: dict[str, str], path: str
) -> None:
    response = await get_with(gateway, path, headers)
    assert_envelope(response, 401, "authentication_error", "invalid_api_key")
    assert response.headers["www-authenticate"].lower().startswith("bearer")


async def test_chat_without_a_valid_key_gets_401_even_with_a_bad_body(
    gateway: RunningGateway,
) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as raw:
        response = await raw.post("/v1/chat/completions", content=b"{not json")
    assert_envelope(response, 401, "authentication_error", "invalid_api_key")


async def test_revoked_key_gets_401_at_once(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http)
    assert (await chat_with(gateway, created["key"])).status_code == 200
    revoked = await http.post(f"{KEYS}/{created['id']}/revoke")
    assert revoked.status_code == 200
    response = await chat_with(gateway, created["key"])
    assert_envelope(response, 401, "authentication_error", "invalid_api_key")


async def test_key_expiring_soon_works_until_then_and_gets_401_after(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    expires_at = datetime.now(UTC) + timedelta(seconds=1.5)
    created = await create_key(http, expires_at=expires_at.isoformat())
    assert (await chat_with(gateway, created["key"])).status_code == 200
    await trio.sleep((expires_at - datetime.now(UTC)).total_seconds() + 0.05)
    response = await chat_with(gateway, created["key"])
    assert_envelope(response, 401, "authentication_error", "invalid_api_key")


async def test_expiry_set_by_patch_is_enforced(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http)
    expires_at = datetime.now(UTC) + timedelta(seconds=1)
    patched = await http.patch(
        f"{KEYS}/{created['id']}", json={"expires_at": expires_at.isoformat()}
    )
    assert patched.status_code == 200, patched.text
    await trio.sleep((expires_at - datetime.now(UTC)).total_seconds() + 0.05)
    response = await chat_with(gateway, created["key"])
    assert_envelope(response, 401, "authentication_error", "invalid_api_key")


async def test_official_client_raises_authentication_error(gateway: RunningGateway) -> None:
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key="gw_prod_wrong_key_1234567890", max_retries=0
    ) as wrong:
        with pytest.raises(openai.AuthenticationError) as caught:
            await wrong.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
            )
    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"


# -- 403 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", KEYS),
        ("POST", KEYS),
        ("GET", "/v1/management/providers"),
        ("GET", "/v1/management/providers/openai"),
        ("GET", "/v1/management/providers/health"),
        ("POST", "/v1/management/providers/openai/disable"),
    ],
)
async def test_key_without_management_permission_gets_403_on_management(
    gateway: RunningGateway, http: httpx.AsyncClient, method: str, path: str
) -> None:
    created = await create_key(http, type="prod")
    assert "management" not in created["permissions"]
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as raw:
        response = await raw.request(
            method, path, headers=bearer(created["key"]), json={"name": "x"}
        )
    assert_envelope(response, 403, "permission_error", "insufficient_permissions")
    # The refused disable changed nothing.
    detail = await http.get("/v1/management/providers/openai")
    assert detail.json()["status"] == "active"


async def test_key_without_chat_permission_gets_403_on_chat(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, permissions=["models"])
    response = await chat_with(gateway, created["key"])
    assert_envelope(response, 403, "permission_error", "insufficient_permissions")


async def test_allowed_models_restricts_chat(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, allowed_models=["gpt-4o-mini"])
    assert (await chat_with(gateway, created["key"])).status_code == 200
    response = await chat_with(gateway, created["key"], model="gpt-4o")
    assert_envelope(response, 403, "permission_error", "model_not_allowed")


async def test_allowed_models_prefix_pattern(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, allowed_models=["gpt-4o*"])
    assert (await chat_with(gateway, created["key"], model="gpt-4o")).status_code == 200
    response = await chat_with(gateway, created["key"], model="claude-sonnet-4-5")
    assert_envelope(response, 403, "permission_error", "model_not_allowed")


async def test_a_restricted_key_is_never_served_by_a_model_it_may_not_use(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """gpt-4o-mini failing fell back to its catalog chain (Gemini) for a key allowed
    only gpt-4o-mini; the chain now keeps only the models the key may use."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    created = await create_key(http, allowed_models=["gpt-4o-mini"])
    response = await chat_with(gateway, created["key"], service={"cache": "skip"})
    assert_envelope(response, 502, "provider_error", "provider_error")
    assert response.json()["error"]["provider"] == "openai"
    assert "fallback_provider" not in response.json()["error"]


async def test_a_restricted_key_falls_back_only_to_models_it_may_use(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    created = await create_key(http, allowed_models=["gpt-4o-mini", "claude-haiku-4-5"])
    response = await chat_with(gateway, created["key"], service={"cache": "skip"})
    assert response.status_code == 200, response.text
    assert response.headers["x-service-model-used"] == "anthropic/claude-haiku-4-5"


async def test_auto_routes_among_the_models_a_key_may_use(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """`auto` answered 403 naming the model it routed to when the key was restricted."""
    created = await create_key(http, allowed_models=["mistral-*"])
    response = await chat_with(gateway, created["key"], model="auto")
    assert response.status_code == 200, response.text
    assert response.json()["model"].startswith("mistral-")
    assert response.headers["x-service-model-used"].startswith("mistral/")


async def test_a_named_fallback_the_key_may_not_use_is_403(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, allowed_models=["gpt-4o-mini"])
    response = await chat_with(gateway, created["key"], service={"fallbacks": ["gpt-4o"]})
    assert_envelope(response, 403, "permission_error", "model_not_allowed")
    assert response.json()["error"]["model"] == "gpt-4o"


async def test_the_model_list_shows_a_restricted_key_its_models(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """The list showed the whole catalog to a key that may use only some of it."""
    created = await create_key(http, allowed_models=["gpt-4o-mini*", "rerank-v3.5"])
    listed = await get_with(gateway, "/v1/models", bearer(created["key"]))
    ids = {m["id"] for m in listed.json()["data"]}
    assert ids == {
        "gpt-4o-mini",
        "gpt-4o-mini-transcribe",
        "gpt-4o-mini-tts",
        "gpt-4o-mini-realtime-preview",
        "rerank-v3.5",
    }
    everything = await http.get("/v1/models")
    assert len(everything.json()["data"]) > len(ids)


async def test_official_client_raises_permission_denied_for_a_forbidden_model(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, allowed_models=["gpt-4o-mini"])
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=created["key"], max_retries=0
    ) as restricted:
        with pytest.raises(openai.PermissionDeniedError) as caught:
            await restricted.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "Hi"}]
            )
    assert caught.value.status_code == 403


async def test_allowed_ips_excluding_the_caller_gives_403(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, allowed_ips=["10.0.0.0/8", "192.0.2.7"])
    response = await chat_with(gateway, created["key"])
    assert_envelope(response, 403, "permission_error", "insufficient_permissions")


@pytest.mark.parametrize(
    "allowlist", [["127.0.0.0/8"], ["127.0.0.1"], ["10.0.0.0/8", "127.0.0.1/32"]]
)
async def test_allowed_ips_including_the_caller_admit_it(
    gateway: RunningGateway, http: httpx.AsyncClient, allowlist: list[str]
) -> None:
    created = await create_key(http, allowed_ips=allowlist)
    assert (await chat_with(gateway, created["key"])).status_code == 200


async def test_allowed_ips_patch_takes_effect_at_once(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http)
    assert (await chat_with(gateway, created["key"])).status_code == 200
    patched = await http.patch(f"{KEYS}/{created['id']}", json={"allowed_ips": ["10.1.2.3"]})
    assert patched.status_code == 200, patched.text
    assert patched.json()["allowed_ips"] == ["10.1.2.3"]
    response = await chat_with(gateway, created["key"])
    assert_envelope(response, 403, "permission_error", "insufficient_permissions")


async def test_official_client_raises_permission_denied_for_a_foreign_address(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await create_key(http, allowed_ips=["203.0.113.0/24"])
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=created["key"], max_retries=0
    ) as remote_only:
        with pytest.raises(openai.PermissionDeniedError):
            await remote_only.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
            )
