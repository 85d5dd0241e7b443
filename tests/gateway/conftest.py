"""A whole gateway in process: store in a temporary folder, simulators in demo mode.

The gateway, its simulators and the official `openai` client share the test's trio
loop; the nursery fixture owns them all, so every test ends with everything closed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from tests.postgres_server import process_server

ADMIN_KEY = "gw_admin_test_0123456789abcdefghijklmnop"


@pytest.fixture(scope="session", autouse=True)
def warm_pii_worker(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under pytest-xdist, start the PII worker process and load its name model
    (`gateway.kernels.pii.worker`; ~4 s on a cold process, kept for the whole session by
    trio-parallel's worker cache) before the first test, as the files' order did in one
    process. Otherwise the first upload test a worker runs waits for it while its client's
    10 s timeout runs: at load 4-5 that timed out (test_docx_and_xlsx_are_extracted).
    """
    if hasattr(request.config, "workerinput"):
        from gateway.kernels.pii import detector as pii
        from gateway.kernels.pii import worker as pii_worker

        limiter = trio.CapacityLimiter(1)
        trio.run(partial(pii_worker.run_scan, pii.scan_text, "Dr. Ada Lovelace", limiter=limiter))
    yield


def gateway_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """A test gateway's settings (shared by the suites that start one): demo mode on a
    free port, an unpaced simulator, data under `tmp_path`; `overrides` on top. With
    GATEWAY_TEST_DATABASE=postgres the store is a fresh PostgreSQL database instead of
    the SQLite file (any gateway test, run on the shared store's backend)."""
    base: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 0,
        "data_dir": tmp_path / "data",
        "demo": True,
        "admin_key": ADMIN_KEY,
        "sim_ttft_ms": 0,
        "sim_tokens_per_second": 0,
        "shutdown_grace_s": 2.0,
    }
    if os.environ.get("GATEWAY_TEST_DATABASE") == "postgres":
        base["database_url"] = process_server().new_database()
    return Settings(**(base | overrides))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Demo mode with an unpaced simulator; tests override what they need."""
    # Issue 23: the in-process gateways write usage through a thread (a writer
    # process per test would cost ~0.5 s of CPU each); tests/gateway/workers/
    # test_usage_process*.py run the process writer, through a real `gateway serve` too.
    return gateway_settings(tmp_path, usage_writer="thread")


@pytest.fixture
async def gateway(nursery: trio.Nursery, settings: Settings) -> RunningGateway:
    running: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
    return running


@pytest.fixture
async def client(gateway: RunningGateway) -> AsyncIterator[openai.AsyncOpenAI]:
    """The official client with only `base_url` and `api_key` changed (and no retries,
    so that errors surface as they are)."""
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=ADMIN_KEY, max_retries=0
    ) as c:
        yield c


@pytest.fixture
async def http(gateway: RunningGateway) -> AsyncIterator[httpx.AsyncClient]:
    """A plain HTTP client for what the OpenAI client does not expose (management API)."""
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=10
    ) as c:
        yield c
