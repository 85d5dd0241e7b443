"""A restart must not undo an acknowledged management change.

The start-up configuration of providers (demo simulators, or the vendors' environment
variables) once replaced the stored configuration wholesale: a provider's settings changed
through the API were lost and a disabled provider came back enabled at every restart.
"""

from __future__ import annotations

from functools import partial

import attrs
import httpx
import trio

from gateway.app.server import run_gateway
from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY

PROVIDERS = "/v1/management/providers"


async def _serve_once(settings: Settings, env: dict[str, str], then: object) -> None:
    """Start a gateway, run `then(http)`, stop it gracefully."""
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        running = await nursery.start(
            partial(run_gateway, settings, env=env, shutdown_trigger=stop.wait)
        )
        async with httpx.AsyncClient(
            base_url=running.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}
        ) as http:
            await then(http)  # type: ignore[operator]
        stop.set()


async def test_demo_restart_keeps_provider_settings_and_status(settings: Settings) -> None:
    async def change(http: httpx.AsyncClient) -> None:
        patched = await http.patch(
            f"{PROVIDERS}/openai", json={"settings": {"organization_id": "org-kept"}}
        )
        assert patched.status_code == 200, patched.text
        assert (await http.post(f"{PROVIDERS}/mistral/disable")).status_code == 200

    seen: dict[str, dict[str, object]] = {}

    async def read(http: httpx.AsyncClient) -> None:
        for provider in ("openai", "mistral"):
            seen[provider] = (await http.get(f"{PROVIDERS}/{provider}")).json()

    await _serve_once(settings, {}, change)
    await _serve_once(settings, {}, read)
    openai_settings = seen["openai"]["settings"]
    assert isinstance(openai_settings, dict)
    assert openai_settings["organization_id"] == "org-kept"
    assert str(openai_settings["base_url"]).startswith("http://127.0.0.1:")  # the new sim
    assert seen["mistral"]["status"] == "disabled"


async def test_env_restart_sets_the_key_and_base_url_and_keeps_the_rest(
    settings: Settings,
) -> None:
    plain = attrs.evolve(settings, demo=False)
    env = {"OPENAI_API_KEY": "sk-first", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}

    async def change(http: httpx.AsyncClient) -> None:
        patched = await http.patch(
            f"{PROVIDERS}/openai", json={"settings": {"hedge_after_ms": 250}}
        )
        assert patched.status_code == 200, patched.text

    seen: dict[str, object] = {}

    async def read(http: httpx.AsyncClient) -> None:
        seen.update((await http.get(f"{PROVIDERS}/openai")).json())

    await _serve_once(plain, env, change)
    moved = env | {"OPENAI_API_KEY": "sk-second", "OPENAI_BASE_URL": "http://127.0.0.1:10/v1"}
    await _serve_once(plain, moved, read)
    assert seen["settings"] == {"base_url": "http://127.0.0.1:10/v1", "hedge_after_ms": 250}
    assert seen["status"] == "active"
