"""Fixtures shared by the simulator's tests: a simulator in process, an OpenAI client.

The official `openai` client (anyio based) runs under trio, so the simulator and the
client share one event loop and one nursery: no threads, and every test ends with the
simulator cancelled and its connections closed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest
import trio

from providers.sim.server import SimConfig, SimServer, serve_simulator


@pytest.fixture
def sim_config() -> SimConfig:
    """No pacing by default; a test overrides this fixture to slow answers down."""
    return SimConfig()


@pytest.fixture
async def sim(nursery: trio.Nursery, sim_config: SimConfig) -> SimServer:
    server: SimServer = await nursery.start(serve_simulator, "127.0.0.1", 0, sim_config)
    return server


@pytest.fixture
async def openai_client(sim: SimServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """The official client pointed at the simulator; no retries, so faults surface."""
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url=sim.base_url("openai") + "/v1", max_retries=0
    )
    async with client:
        yield client
