"""Gateways started as an install without some extras would be: those extras' packages
made unimportable (a None entry in `sys.modules`, which `importlib.util.find_spec` and
`import` both treat as absent) for the length of a test."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from tests.gateway.conftest import ADMIN_KEY, gateway_settings

Block = Callable[..., None]


@pytest.fixture
def block(monkeypatch: pytest.MonkeyPatch) -> Block:
    """`block("av", ...)`: those modules cannot be imported until the test ends."""

    def blocked(*modules: str) -> None:
        for module in modules:
            monkeypatch.setitem(sys.modules, module, None)

    return blocked


async def start(nursery: trio.Nursery, tmp_path: Path) -> RunningGateway:
    """A demo gateway in `nursery` (start it after `block`)."""
    settings = gateway_settings(tmp_path, usage_writer="thread")
    running: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
    return running


@asynccontextmanager
async def clients(
    gateway: RunningGateway,
) -> AsyncIterator[tuple[openai.AsyncOpenAI, httpx.AsyncClient]]:
    """The official client (no retries) and httpx, both with the admin key."""
    async with (
        openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=ADMIN_KEY, max_retries=0) as sdk,
        httpx.AsyncClient(
            base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
        ) as http,
    ):
        yield sdk, http
