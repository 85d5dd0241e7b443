"""Health endpoints, and the error envelope for requests the gateway cannot route or read.

Whatever a client sends, the answer is a JSON error envelope with a 4xx status, never a
500: a 500 tells the client that retrying might help, and hides what it got wrong.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from gateway.app.server import RunningGateway
from providers.sim.core import Fault


def assert_envelope(response: httpx.Response, status: int, code: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code", "doc_url"}
    assert error["message"] and error["type"]
    if code is not None:
        assert error["code"] == code


# -- health --------------------------------------------------------------------------------


async def test_health_needs_no_key(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        response = await anonymous.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] in ("ok", "healthy")
    stamp = datetime.fromisoformat(body["timestamp"].replace("Z", "+00:00"))
    assert abs(stamp - datetime.now(UTC)) < timedelta(seconds=10)


async def test_detailed_health_needs_a_key(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        response = await anonymous.get("/v1/health/detailed")
    assert_envelope(response, 401, "invalid_api_key")
    assert response.json()["error"]["type"] == "authentication_error"


async def test_detailed_health_lists_components_and_providers(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    response = await http.get("/v1/health/detailed")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "healthy"
    assert body["timestamp"]
    components = body["components"]
    for name in ("api", "database", "cache"):
        assert components[name]["status"] == "healthy"
        assert components[name]["latency_ms"] >= 0
    providers = components["providers"]
    assert set(providers) == set(gateway.providers)
    for entry in providers.values():
        assert entry["status"] == "healthy"
        assert "latency_ms" in entry


async def test_detailed_health_needs_no_management_permission(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await http.post("/v1/management/api-keys", json={"name": "app", "type": "dev"})
    key = created.json()["key"]
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=10
    ) as app:
        response = await app.get("/v1/health/detailed")
    assert response.status_code == 200
    assert "openai" in response.json()["components"]["providers"]


async def test_detailed_health_shows_failures_and_disabled_providers(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500, remaining=2))
    # The provider is forced, so that no fallback to another vendor hides the failures.
    chat = {
        "model": "gpt-4o-mini",
        "provider": "openai",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    for n in range(2):
        body = chat | {"messages": [{"role": "user", "content": f"Hi {n}"}]}
        assert (await http.post("/v1/chat/completions", json=body)).status_code >= 500
    assert (await http.post("/v1/management/providers/mistral/disable")).status_code == 200
    body = (await http.get("/v1/health/detailed")).json()
    providers = body["components"]["providers"]
    assert body["status"] == "degraded"
    assert providers["openai"]["status"] == "degraded"
    assert providers["mistral"]["status"] == "disabled"
    assert providers["anthropic"]["status"] == "healthy"


async def test_a_disabled_provider_does_not_degrade_the_gateway(
    http: httpx.AsyncClient,
) -> None:
    """An operator's switched-off provider made the overall status `degraded` for good
    (the status page does not count it either)."""
    assert (await http.post("/v1/management/providers/mistral/disable")).status_code == 200
    body = (await http.get("/v1/health/detailed")).json()
    assert body["components"]["providers"]["mistral"]["status"] == "disabled"
    assert body["status"] == "healthy"
    assert (await http.get("/v1/status")).json()["status"] == "operational"


# -- routing errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/nope", "/v1", "/v1/chat", "/v1/management/api-keys/key_1/unknown", "/v2/models"]
)
async def test_unknown_routes_give_a_404_envelope(http: httpx.AsyncClient, path: str) -> None:
    assert_envelope(await http.get(path), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/chat/completions"),
        ("PUT", "/v1/management/api-keys"),
        ("DELETE", "/v1/management/api-keys"),
        ("GET", "/v1/management/api-keys/key_1/revoke"),
        ("PUT", "/v1/management/providers/openai"),
        ("POST", "/health"),
    ],
)
async def test_wrong_methods_give_a_405_envelope(
    http: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await http.request(method, path)
    assert_envelope(response, 405, "method_not_allowed")


async def test_405_names_the_allowed_methods(http: httpx.AsyncClient) -> None:
    response = await http.put("/v1/management/api-keys")
    assert response.status_code == 405
    assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


# -- unreadable bodies ---------------------------------------------------------------------

BODY_ENDPOINTS = [
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/management/api-keys"),
    ("PATCH", "/v1/management/api-keys/{key_id}"),
    ("POST", "/v1/management/api-keys/{key_id}/rotate"),
    ("POST", "/v1/management/providers"),
    ("PATCH", "/v1/management/providers/openai"),
    ("POST", "/v1/management/providers/openai/credentials"),
]
BAD_BODIES = [
    pytest.param(b"{not json", "application/json", id="broken-json"),
    pytest.param(b"[1, 2, 3]", "application/json", id="array"),
    pytest.param(b'"text"', "application/json", id="string"),
    pytest.param(b"null", "application/json", id="null"),
    pytest.param(b"42", "application/json", id="number"),
    pytest.param(b"\xff\xfe\x00", "application/json", id="not-utf8"),
    pytest.param(b"name=x", "application/x-www-form-urlencoded", id="form"),
    pytest.param(b"hello", "text/plain", id="text"),
    pytest.param(b'{"a": NaN', "application/json", id="truncated"),
]


@pytest.mark.parametrize(("method", "template"), BODY_ENDPOINTS)
@pytest.mark.parametrize(("content", "content_type"), BAD_BODIES)
async def test_bad_bodies_give_400_never_500(
    http: httpx.AsyncClient,
    method: str,
    template: str,
    content: bytes,
    content_type: str,
) -> None:
    created = await http.post("/v1/management/api-keys", json={"name": "target"})
    path = template.format(key_id=created.json()["id"])
    response = await http.request(
        method, path, content=content, headers={"content-type": content_type}
    )
    assert_envelope(response, 400)
    assert response.json()["error"]["type"] == "invalid_request_error"
    # Nothing changed: the target key and the provider are as they were.
    target = (await http.get(f"/v1/management/api-keys/{created.json()['id']}")).json()
    assert target["name"] == "target"
    assert target["expires_at"] is None
    provider = (await http.get("/v1/management/providers/openai")).json()
    assert provider["status"] == "active"


@pytest.mark.parametrize("path", ["/v1/management/api-keys", "/v1/chat/completions"])
async def test_empty_body_gives_400(http: httpx.AsyncClient, path: str) -> None:
    assert_envelope(await http.post(path), 400)


@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        ("POST", "/v1/management/api-keys", b'{"name": "\\ud800"}'),
        ("PATCH", "/v1/management/providers/openai", b'{"settings": {"x": "\\udfff"}}'),
    ],
)
async def test_lone_surrogates_give_400(
    http: httpx.AsyncClient, method: str, path: str, content: bytes
) -> None:
    response = await http.request(
        method, path, content=content, headers={"content-type": "application/json"}
    )
    assert_envelope(response, 400)
