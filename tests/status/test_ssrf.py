"""The SSRF guard: addresses that reach the gateway's own network are refused at creation
and at every delivery, before any connection is attempted."""

from __future__ import annotations

import ipaddress

import httpx
import pytest
import trio

from gateway.kernels.webhooks.delivery import Deliverer, RetryPolicy
from gateway.kernels.webhooks.hub import DeliveryJob
from providers.upstream.guard import (
    AddressPolicy,
    UnsafeUrl,
    check_registration,
    check_url,
    refusal,
)

REFUSED_URLS = [
    "http://127.0.0.1/hook",
    "http://10.0.0.1/hook",
    "http://192.168.1.20:8080/hook",
    "http://172.16.0.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[fd00:ec2::254]/hook",
    "http://0.0.0.0/hook",
    "http://localhost:9/hook",
]


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.0.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "not globally routable"),
        ("::ffff:10.1.2.3", "private"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_refusal_table(address: str, reason: str | None) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason


class CountingResolver:
    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        return self.answers.pop(0)


@pytest.mark.parametrize("url", REFUSED_URLS)
async def test_the_api_refuses_internal_urls(http: httpx.AsyncClient, url: str) -> None:
    body = {"url": url.replace("127.0.0.1", "127.0.0.2"), "events": ["incident.created"]}
    response = await http.post("/v1/status/webhooks", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "unsafe_webhook_url"
    assert error["param"] == "url"
    alert = {
        "name": "a",
        "condition": {"metric": "cost", "operator": "gt", "threshold": 1, "window_minutes": 5},
        "notify": {"webhook": body["url"]},
    }
    response = await http.post("/v1/alerts", json=alert)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "notify.webhook"


async def test_a_name_resolving_to_loopback_is_refused() -> None:
    resolver = CountingResolver(["93.184.216.34", "127.0.0.1"])
    with pytest.raises(UnsafeUrl, match="loopback"):
        await check_url("https://hooks.example.com/x", AddressPolicy(), resolver)


async def test_only_http_and_https() -> None:
    for url in ("file:///etc/passwd", "gopher://example.com/", "ftp://example.com/"):
        with pytest.raises(UnsafeUrl) as caught:
            await check_url(url, AddressPolicy(), CountingResolver())
        assert caught.value.code == "invalid_webhook_url"


@pytest.mark.parametrize(
    "url", ["http://a..b/", "http://.com/", f"http://{'a' * 64}.com/", "http://xn--zz/"]
)
async def test_a_host_that_is_no_dns_name_is_an_invalid_url(
    http: httpx.AsyncClient, url: str
) -> None:
    """Empty or over-long labels and bad IDNA A-labels raised UnicodeError, a 500."""
    body = {"url": url, "events": ["incident.created"]}
    response = await http.post("/v1/status/webhooks", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_webhook_url"
    alert = {
        "name": "a",
        "condition": {"metric": "cost", "operator": "gt", "threshold": 1, "window_minutes": 5},
        "notify": {"webhook": url},
    }
    response = await http.post("/v1/alerts", json=alert)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_webhook_url"


async def test_allowed_hosts_skip_the_address_check() -> None:
    policy = AddressPolicy(allowed_hosts=frozenset({"127.0.0.1"}))
    destination = await check_url("http://127.0.0.1:8000/x", policy)
    assert destination.ip == "127.0.0.1"


def job(url: str) -> DeliveryJob:
    return DeliveryJob("dlv_1", url, "whsec_test", "incident.created", b"{}")


async def test_each_delivery_re_resolves_and_connects_only_to_the_checked_address() -> None:
    """The first delivery goes to the address the check saw (with the name in Host); the
    second finds that the name now points to the metadata address and makes no call."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    resolver = CountingResolver(["93.184.216.34"], ["169.254.169.254"])
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        deliverer = Deliverer(client, RetryPolicy(), AddressPolicy(), resolve=resolver)
        first = await deliverer.attempt(job("https://hooks.example.com/in"))
        second = await deliverer.attempt(job("https://hooks.example.com/in"))
    assert first.ok
    assert not second.ok and not second.retryable
    assert second.error is not None and "link-local" in second.error
    assert resolver.calls == ["hooks.example.com", "hooks.example.com"]
    assert len(seen) == 1
    assert seen[0].url.host == "93.184.216.34"
    assert seen[0].headers["host"] == "hooks.example.com"
    assert seen[0].extensions["sni_hostname"] == "hooks.example.com"


@pytest.mark.parametrize("url", REFUSED_URLS)
async def test_refused_deliveries_never_connect(url: str) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no connection may be attempted")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        deliverer = Deliverer(client, RetryPolicy(), AddressPolicy())
        with trio.fail_after(5):
            status = await deliverer.deliver(job(url), _ignore)
    assert status == "failed"


async def _ignore(*_: object) -> None:
    return None


class FailingResolver:
    async def __call__(self, host: str, port: int) -> list[str]:
        raise OSError(-2, "Name or service not known")


async def test_registration_accepts_a_name_that_does_not_resolve_yet() -> None:
    """A hook registered before its DNS record (or with the resolver offline) is kept;
    every delivery resolves and checks it again."""
    await check_registration("https://hooks.example.com/x", AddressPolicy(), FailingResolver())
    with pytest.raises(UnsafeUrl, match="does not resolve"):
        await check_url("https://hooks.example.com/x", AddressPolicy(), FailingResolver())
    with pytest.raises(UnsafeUrl, match="loopback"):
        await check_registration(
            "https://hooks.example.com/x", AddressPolicy(), CountingResolver(["127.0.0.1"])
        )


async def test_the_api_registers_hooks_on_names_that_do_not_resolve(
    http: httpx.AsyncClient,
) -> None:
    """`.invalid` never resolves (RFC 2606): a status webhook and an alert on it are
    created (they were a 400 `invalid_webhook_url`, which failed every registration on a
    gateway whose resolver was offline)."""
    url = "https://hooks.example.invalid/status"
    response = await http.post(
        "/v1/status/webhooks", json={"url": url, "events": ["incident.created"]}
    )
    assert response.status_code == 201, response.text
    alert = {
        "name": "a",
        "condition": {"metric": "cost", "operator": "gt", "threshold": 1, "window_minutes": 5},
        "notify": {"webhook": url},
    }
    response = await http.post("/v1/alerts", json=alert)
    assert response.status_code == 201, response.text


async def test_a_delivery_to_a_name_that_does_not_resolve_is_retried() -> None:
    """Registration accepts such a name, so DNS failing at delivery is treated like a
    refused connection (retried within the window), not like an unsafe address."""
    async with httpx.AsyncClient() as client:
        deliverer = Deliverer(client, RetryPolicy(), AddressPolicy(), resolve=FailingResolver())
        attempt = await deliverer.attempt(job("https://hooks.example.com/in"))
    assert not attempt.ok and attempt.retryable
    assert attempt.error is not None and "does not resolve" in attempt.error
