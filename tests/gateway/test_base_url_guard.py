"""Providers' `settings.base_url` is held to the operator's address policy, when it is set
and at every new connection (`providers.upstream.guard`).

A workspace admin pointed a provider at a loopback address and the next chat call carried
the provider's credential there; `http://169.254.169.254/` was accepted too, and the
health probes called it every minute. Now link-local and cloud metadata addresses are
always refused (unless the operator's allow list names them); loopback and private ranges
are allowed by default and refused with `upstream_private_addresses = "deny"`. The check
at connection time holds for chat calls, the live test, health probes and WebSocket
adapters, with both upstream clients, and redirects are not followed.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

import attrs
import httpx
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from gateway.workers.health_probes import probe_round
from tests.gateway.conftest import ADMIN_KEY
from tests.providers.listeners import Answer, recording_listener

PROVIDERS = "/v1/management/providers"
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
ALWAYS_REFUSED = [
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.170.2/v1",
    "http://[fe80::1]/v1",
    "http://[fd00:ec2::254]/v1",
    "http://100.100.100.200/v1",
    "http://metadata.google.internal/v1",
    "http://[::ffff:169.254.169.254]/v1",
]
PRIVATE = ["http://127.0.0.1:9/v1", "http://10.0.0.5/v1", "http://192.168.1.20:8000/v1"]


def refused(answer: httpx.Response, url: str) -> None:
    assert answer.status_code == 400, (url, answer.text)
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("unsafe_base_url", "settings.base_url"), url
    assert error["type"] == "invalid_request_error"
    assert "settings.base_url" in error["message"]


async def set_base_url(http: httpx.AsyncClient, url: str) -> tuple[httpx.Response, httpx.Response]:
    """The URL set both ways: configuring a provider anew, and patching one."""
    configured = await http.post(
        PROVIDERS,
        json={
            "provider": "mistral",
            "credentials": {"api_key": "sk-x"},
            "settings": {"base_url": url},
        },
    )
    patched = await http.patch(f"{PROVIDERS}/openai", json={"settings": {"base_url": url}})
    return configured, patched


async def test_metadata_and_link_local_addresses_are_refused_when_set(
    http: httpx.AsyncClient,
) -> None:
    for url in ALWAYS_REFUSED:
        for answer in await set_base_url(http, url):
            refused(answer, url)
    for url in PRIVATE:  # the default: a model server on this machine or network
        for answer in await set_base_url(http, url):
            assert answer.status_code in (200, 201), (url, answer.text)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, health_probe_interval_s=0)


@pytest.fixture
def deny(settings: Settings) -> Settings:
    return attrs.evolve(settings, upstream_private_addresses="deny")


async def started(nursery: trio.Nursery, settings: Settings, env: dict[str, str]) -> Any:
    running: RunningGateway = await nursery.start(partial(run_gateway, settings, env=env))
    return running


def as_operator(gateway: RunningGateway) -> httpx.AsyncClient:
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    return httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30)


def sim_requests(gateway: RunningGateway) -> int:
    assert gateway.sim is not None
    return sum(gateway.sim.stats.by_path.values())


@pytest.mark.parametrize("client", ["lean", "httpx"])
async def test_deny_refuses_private_addresses_when_set_and_at_every_connection(
    nursery: trio.Nursery, deny: Settings, client: Literal["lean", "httpx"]
) -> None:
    """The demo simulators listen on 127.0.0.1, configured by the operator at start (no
    API check): with `deny`, no call reaches them, not a byte."""
    gateway = await started(nursery, attrs.evolve(deny, upstream_client=client), {})
    async with as_operator(gateway) as http:
        for url in [*PRIVATE, "http://localhost:9/v1", *ALWAYS_REFUSED]:
            refused(
                (await http.patch(f"{PROVIDERS}/openai", json={"settings": {"base_url": url}})), url
            )
        chat = await http.post("/v1/chat/completions", json=CHAT)
        assert chat.status_code >= 500, chat.text
        live = await http.post(f"{PROVIDERS}/openai/test")
        assert live.json()["test_result"] == "failure", live.text
        await probe_round(gateway.state)
        socket = await http.patch(
            f"{PROVIDERS}/elevenlabs", json={"settings": {"speech_transport": "websocket"}}
        )
        assert socket.status_code == 200, socket.text
        speech = await http.post(
            "/v1/audio/speech",
            json={"model": "eleven_flash_v2_5", "voice": "calm", "input": "Hi", "stream": True},
        )
        # ElevenLabs' socket was refused: the chain fell back to the local engine.
        assert speech.status_code == 200
        assert speech.headers["x-service-provider"] == "local"
        assert speech.headers["x-service-fallback"] == "true"
    assert sim_requests(gateway) == 0


async def test_the_operators_allow_list_lets_a_host_through(
    nursery: trio.Nursery, deny: Settings
) -> None:
    allowed = attrs.evolve(deny, upstream_allowed_hosts="127.0.0.1, 169.254.169.254")
    gateway = await started(nursery, allowed, {})
    async with as_operator(gateway) as http:
        chat = await http.post("/v1/chat/completions", json=CHAT)
        assert chat.status_code == 200, chat.text
        socket = await http.patch(
            f"{PROVIDERS}/elevenlabs", json={"settings": {"speech_transport": "websocket"}}
        )
        assert socket.status_code == 200
        speech = await http.post(
            "/v1/audio/speech",
            json={"model": "eleven_flash_v2_5", "voice": "calm", "input": "Hi", "stream": True},
        )
        assert speech.status_code == 200, speech.text
        assert speech.headers["x-service-provider"] == "elevenlabs"
        metadata = "http://169.254.169.254/v1"
        for answer in await set_base_url(http, metadata):
            assert answer.status_code in (200, 201), answer.text
        refused(
            await http.patch(f"{PROVIDERS}/openai", json={"settings": {"base_url": PRIVATE[1]}}),
            PRIVATE[1],
        )
    assert sim_requests(gateway) >= 2


def redirect_to(to: str) -> Answer:
    """An upstream's answer to every request: a redirect to `to`."""
    location = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: " + to.encode()
    return lambda head: location + b"\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize("client", ["lean", "httpx"])
async def test_a_redirect_to_a_refused_address_is_not_followed(
    nursery: trio.Nursery, deny: Settings, client: Literal["lean", "httpx"]
) -> None:
    seen: list[bytes] = []
    target = await nursery.start(recording_listener, seen)
    redirected: list[bytes] = []
    to = f"http://127.0.0.1:{target}/v1/chat/completions"
    port = await nursery.start(recording_listener, redirected, redirect_to(to))
    settings = attrs.evolve(
        deny, demo=False, upstream_client=client, upstream_allowed_hosts="localhost"
    )
    env = {
        "OPENAI_API_KEY": "sk-secret-credential",
        "OPENAI_BASE_URL": f"http://localhost:{port}/v1",
    }
    gateway = await started(nursery, settings, env)
    async with as_operator(gateway) as http:
        chat = await http.post("/v1/chat/completions", json=CHAT)
    assert chat.status_code >= 400, chat.text
    assert redirected and seen == []  # asked, redirected, and the target never reached
